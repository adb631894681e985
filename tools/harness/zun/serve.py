"""Serves a WSGI application on 127.0.0.1: serve.py MODULE:ATTRIBUTE PORT.

keystone's and placement's oslo.config parse sys.argv, so gunicorn's own arguments make them exit
(and gunicorn respawn them in a loop); this launcher clears argv and uses werkzeug's threaded
server instead.
"""
import importlib
import sys

from werkzeug.serving import run_simple

target, port = sys.argv[1], int(sys.argv[2])
sys.argv = sys.argv[:1]
module, attribute = target.split(':')
app = getattr(importlib.import_module(module), attribute)
run_simple('127.0.0.1', port, app, threaded=True, use_reloader=False)
