"""Serves a WSGI application on 127.0.0.1: serve.py MODULE:ATTRIBUTE PORT [WORKERS [THREADS]].

As a deployment serves keystone and placement (uwsgi or mod_wsgi: a few processes, a few threads
each), with gunicorn's gthread workers, 2 processes of 4 threads unless told. Bounded concurrency
matters: with a thread per request (werkzeug's server, the harness's first version), 100 capsule
deletes at once held all of placement's 15 database connections, some inside a transaction
waiting for a second one, and InnoDB row locks waited 50 s until Zun's calls failed with 500.
gunicorn is started from here, not from its command line: keystone's and placement's oslo.config
parse sys.argv and exit on gunicorn's own arguments, so argv is cleared before the app loads.
"""
import importlib
import sys

from gunicorn.app.base import BaseApplication

target, port = sys.argv[1], int(sys.argv[2])
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 4
sys.argv = sys.argv[:1]


class Server(BaseApplication):
    def load_config(self):
        for key, value in {
            'bind': f'127.0.0.1:{port}', 'workers': workers, 'threads': threads,
            'worker_class': 'gthread', 'timeout': 120, 'accesslog': None,
        }.items():
            self.cfg.set(key, value)

    def load(self):  # in each worker, after the fork: its own database pool
        module, attribute = target.split(':')
        return getattr(importlib.import_module(module), attribute)


Server().run()
