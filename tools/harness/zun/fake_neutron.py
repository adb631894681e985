"""The one piece of Neutron zun-api needs with the podman network driver: fake_neutron.py PORT.

zun-api looks up the networks a capsule may use (GET /v2.0/networks, the project's first, then
shared ones) before it schedules anything; this answers one shared network and empty lists for
ports, subnets and security groups. Everything else is 501.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

NETWORK = {
    'id': '7b0a5c1e-2d7e-4c53-9a36-3f1f6c1d0001', 'name': 'zunnet', 'tenant_id': '',
    'project_id': '', 'shared': True, 'router:external': False, 'status': 'ACTIVE',
    'subnets': [], 'admin_state_up': True, 'mtu': 1500,
    'created_at': '2026-01-01T00:00:00Z',
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write('neutron: ' + (fmt % args) + '\n')

    def _answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        path = url.path.rstrip('/')
        if path in ('/v2.0/networks', '/networks'):
            networks = [NETWORK]
            if query.get('shared') == ['False'] or 'tenant_id' in query:
                networks = []  # no project networks: zun-api then asks for shared ones
            for key in ('id', 'name'):
                if key in query:
                    networks = [n for n in networks if n[key] in query[key]]
            return self._answer(200, {'networks': networks})
        if path in ('/v2.0/ports', '/v2.0/subnets', '/v2.0/security_groups'):
            return self._answer(200, {path.split('/')[-1]: []})
        if path in ('', '/v2.0'):
            return self._answer(200, {'versions': [{'id': 'v2.0', 'status': 'CURRENT'}]})
        return self._answer(404, {'NeutronError': {'type': 'HTTPNotFound', 'message': path}})

    def do_POST(self):
        return self._answer(501, {'NeutronError': {'message': 'not in the stand-in'}})

    do_PUT = do_DELETE = do_POST


ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
