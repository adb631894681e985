"""The pieces of Neutron Zun uses with the podman network driver: fake_neutron.py PORT KEYSTONE_V3.

zun-api looks up the networks a capsule may use (GET /v2.0/networks, the project's first, then
shared ones) before it schedules anything; this answers one shared network and empty lists for
ports and subnets. For a capsule with ports, zun-compute's docker driver makes a security group
`zun-<capsule uuid>` with one ingress rule per port (zun/container/docker/driver.py
_process_exposed_ports, zun/network/neutron.py expose_ports), lists the project's groups to find
their ids (zun/common/utils.py get_security_group_ids) and deletes the group with the capsule:
security groups and their rules are kept here in memory, owned by the project of the token that
made them (found by asking keystone, as Neutron's auth middleware does), and listed per project.
Everything else is 501.
"""
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse
from urllib.request import Request, urlopen

NETWORK = {
    'id': '7b0a5c1e-2d7e-4c53-9a36-3f1f6c1d0001', 'name': 'zunnet', 'tenant_id': '',
    'project_id': '', 'shared': True, 'router:external': False, 'status': 'ACTIVE',
    'subnets': [], 'admin_state_up': True, 'mtu': 1500,
    'created_at': '2026-01-01T00:00:00Z',
}
KEYSTONE = sys.argv[2].rstrip('/')
GROUPS = {}  # id -> security group, rules inside
LOCK = threading.Lock()
PROJECTS = {}  # token -> its project id


def project_of(token):
    """The token's project, from keystone (a token may read itself), or None if it is not valid."""
    if not token:
        return None
    if token not in PROJECTS:
        request = Request(KEYSTONE + '/auth/tokens',
                          headers={'X-Auth-Token': token, 'X-Subject-Token': token})
        try:
            with urlopen(request, timeout=10) as response:
                PROJECTS[token] = json.load(response)['token'].get('project', {}).get('id')
        except Exception:  # an invalid or expired token: 401 below
            return None
    return PROJECTS[token]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write('neutron: ' + (fmt % args) + '\n')

    def _answer(self, code, body=None):
        data = b'' if body is None else json.dumps(body).encode()
        self.send_response(code)
        if body is not None:
            self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self, what):
        return self._answer(404, {'NeutronError': {'type': 'HTTPNotFound', 'message': what}})

    def _caller(self):
        project = project_of(self.headers.get('X-Auth-Token'))
        if project is None:
            self._answer(401, {'error': {'message': 'The request you have made requires '
                                                    'authentication.', 'code': 401}})
        return project

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return json.loads(self.rfile.read(length) or b'{}')

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
        if path in ('/v2.0/ports', '/v2.0/subnets'):
            return self._answer(200, {path.split('/')[-1]: []})
        if path.startswith('/v2.0/security-groups'):
            project = self._caller()
            if project is None:
                return None
            with LOCK:
                mine = [g for g in GROUPS.values() if g['project_id'] == project]
            one = path[len('/v2.0/security-groups/'):]
            if one:
                found = [g for g in mine if g['id'] == one]
                return self._answer(200, {'security_group': found[0]}) if found else \
                    self._not_found(f'Security group {one} could not be found.')
            for key in ('id', 'name', 'tenant_id', 'project_id'):
                if key in query:
                    mine = [g for g in mine if g[key] in query[key]]
            return self._answer(200, {'security_groups': mine})
        if path in ('', '/v2.0'):
            return self._answer(200, {'versions': [{'id': 'v2.0', 'status': 'CURRENT'}]})
        return self._not_found(path)

    def do_POST(self):
        path = urlparse(self.path).path.rstrip('/')
        if path == '/v2.0/security-groups':
            project = self._caller()
            if project is None:
                return None
            asked = self._body().get('security_group') or {}
            group = {'id': str(uuid.uuid4()), 'name': asked.get('name', ''),
                     'description': asked.get('description', ''), 'tenant_id': project,
                     'project_id': project, 'security_group_rules': []}
            with LOCK:
                GROUPS[group['id']] = group
            return self._answer(201, {'security_group': group})
        if path == '/v2.0/security-group-rules':
            project = self._caller()
            if project is None:
                return None
            asked = self._body().get('security_group_rule') or {}
            with LOCK:
                group = GROUPS.get(asked.get('security_group_id'))
                if group is None or group['project_id'] != project:
                    return self._not_found(
                        f"Security group {asked.get('security_group_id')} could not be found.")
                rule = dict(asked, id=str(uuid.uuid4()), tenant_id=project, project_id=project,
                            ethertype=asked.get('ethertype', 'IPv4'))
                group['security_group_rules'].append(rule)
            return self._answer(201, {'security_group_rule': rule})
        return self._answer(501, {'NeutronError': {'message': 'not in the stand-in'}})

    def do_DELETE(self):
        path = urlparse(self.path).path.rstrip('/')
        if path.startswith('/v2.0/security-groups/'):
            project = self._caller()
            if project is None:
                return None
            one = path[len('/v2.0/security-groups/'):]
            with LOCK:
                group = GROUPS.get(one)
                if group is None or group['project_id'] != project:
                    return self._not_found(f'Security group {one} could not be found.')
                del GROUPS[one]
            return self._answer(204)
        return self._answer(501, {'NeutronError': {'message': 'not in the stand-in'}})

    def do_PUT(self):
        return self._answer(501, {'NeutronError': {'message': 'not in the stand-in'}})


ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
