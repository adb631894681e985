"""Keystone for the Zun test stack, over its REST API.

ks_setup.py KEYSTONE_V3 TYPE=URL...   makes projects service and demo, the users demo (member of
    demo), zun and placement (admin of service), all with password "secret", and one service with
    public, internal and admin endpoints in RegionOne for each TYPE=URL.
ks_setup.py KEYSTONE_V3 --check-placement PLACEMENT_URL   exits 0 once placement lists a
    resource provider (zun-compute's node), else 1.
"""
import sys

import requests

KS = sys.argv[1].rstrip('/')
NAMES = {'container': 'zun', 'placement': 'placement', 'network': 'neutron'}


def token(user, project):
    body = {'auth': {
        'identity': {'methods': ['password'], 'password': {'user': {
            'name': user, 'domain': {'id': 'default'}, 'password': 'secret'}}},
        'scope': {'project': {'name': project, 'domain': {'id': 'default'}}}}}
    answer = requests.post(KS + '/auth/tokens', json=body, timeout=30)
    answer.raise_for_status()
    return answer.headers['X-Subject-Token']


HEADERS = {'X-Auth-Token': token('admin', 'admin')}


def ensure(collection, key, body, **query):
    found = requests.get(f'{KS}/{collection}', headers=HEADERS, params=query, timeout=30)
    found.raise_for_status()
    if found.json()[collection]:
        return found.json()[collection][0]['id']
    made = requests.post(f'{KS}/{collection}', headers=HEADERS, json={key: body}, timeout=30)
    made.raise_for_status()
    return made.json()[key]['id']


def check_placement(url):
    answer = requests.get(url + '/resource_providers', timeout=10, headers={
        **HEADERS, 'OpenStack-API-Version': 'placement 1.14'})
    answer.raise_for_status()
    sys.exit(0 if answer.json()['resource_providers'] else 1)


def main():
    if sys.argv[2] == '--check-placement':
        return check_placement(sys.argv[3])
    projects = {n: ensure('projects', 'project', {'name': n, 'domain_id': 'default'}, name=n)
                for n in ('service', 'demo')}
    roles = {n: ensure('roles', 'role', {'name': n}, name=n) for n in ('admin', 'member')}
    for user, project, role in (('demo', 'demo', 'member'), ('zun', 'service', 'admin'),
                                ('placement', 'service', 'admin')):
        uid = ensure('users', 'user', {'name': user, 'domain_id': 'default',
                                       'password': 'secret'}, name=user)
        requests.put(f'{KS}/projects/{projects[project]}/users/{uid}/roles/{roles[role]}',
                     headers=HEADERS, timeout=30).raise_for_status()
    for arg in sys.argv[2:]:
        service_type, url = arg.split('=', 1)
        sid = ensure('services', 'service', {'name': NAMES.get(service_type, service_type),
                                             'type': service_type}, type=service_type)
        for interface in ('public', 'internal', 'admin'):
            requests.post(f'{KS}/endpoints', headers=HEADERS, timeout=30, json={'endpoint': {
                'service_id': sid, 'interface': interface, 'url': url,
                'region_id': 'RegionOne'}}).raise_for_status()
    print('keystone ready:', projects)


main()
