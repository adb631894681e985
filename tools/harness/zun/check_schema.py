"""Checks capsule create bodies against Zun's own request schemas: check_schema.py < BODIES.

stdin: a JSON list of request bodies (POST /v1/capsules). stdout: a JSON list, one entry per
body: null when Zun 18.0.0 would accept it, else Zun's message. Each body goes through what
zun-api does before it writes anything (zun/api/controllers/v1/capsules.py `_do_post`): the
request schema (schemas/capsules.py `capsule_create`), `check_capsule_template`,
`capsule_get_container_spec`, and the sums of the containers' cpu and memory (which fail on a
memory given as a string).
"""
import copy
import json
import sys

from zun.api.controllers.v1 import capsules as controller
from zun.api.controllers.v1.schemas import capsules
from zun.api.validation import validators
from zun.common import utils

validator = validators.SchemaValidator(capsules.capsule_create)


def check(body):
    body = copy.deepcopy(body)
    validator.validate(body)
    spec, _ = controller.check_capsule_template(body['template'])
    containers, init_containers = utils.capsule_get_container_spec(spec)
    cpu, memory = 0, 0
    for container in containers:
        requests = (container.get('resources') or {}).get('requests') or {}
        cpu += requests.get('cpu') or 0
        memory += requests.get('memory') or 0
    return None


results = []
for body in json.load(sys.stdin):
    try:
        results.append(check(body))
    except Exception as err:  # Zun's ValidationError, InvalidCapsuleTemplate, TypeError
        results.append('%s: %s' % (type(err).__name__, err))
json.dump(results, sys.stdout)
