"""A Zun network driver for a single podman host, for tests.

Zun 18.0.0 ships two network drivers, kuryr and cni; both need Neutron ports wired by an L2
agent, which a test machine does not have. This driver puts every container (a capsule's sandbox)
on one podman network instead (ZUN_PODMAN_NETWORK, default "zunnet", which up.sh creates on a
198.19.x.0/24 subnet) and, once the container runs, writes the address podman gave it into
container.addresses under the Neutron network zun-api chose, the shape Kuryr would produce.
It creates no Neutron ports. Security groups are Neutron's (the harness's stand-in): the docker
driver makes one for a capsule with ports through `neutron_api` and deletes it with the capsule;
with no ports to attach them to, they are not enforced here.
"""
import os

from oslo_log import log as logging
from zun.network import network
from zun.network import neutron

LOG = logging.getLogger(__name__)


class PodmanNetwork(network.Network):
    def init(self, context, docker_api, **kwargs):
        self.context = context
        self.docker = docker_api
        self.neutron_api = neutron.NeutronAPI(context)

    def get_or_create_network(self, context, neutron_net_id):
        return None

    def create_network(self, neutron_net_id):
        return None

    def remove_network(self, network):
        return None

    def process_networking_config(self, container, requested_network, host_config,
                                  container_kwargs, docker, security_group_ids=None):
        host_config['network_mode'] = os.environ.get('ZUN_PODMAN_NETWORK', 'zunnet')
        container.addresses = {requested_network['network']: []}

    def connect_container_to_network(self, container, requested_network,
                                     security_groups=None):
        return []

    def disconnect_container_from_network(self, container, neutron_network_id):
        return None

    def add_security_groups_to_ports(self, container, security_group_ids):
        return None

    def remove_security_groups_from_ports(self, container, security_group_ids):
        return None

    def on_container_started(self, container):
        settings = self.docker.inspect_container(container.container_id).get(
            'NetworkSettings') or {}
        ip = settings.get('IPAddress')
        for net in (settings.get('Networks') or {}).values():
            ip = ip or net.get('IPAddress')
        if not ip:
            LOG.warning('container %s has no address from podman', container.uuid)
            return
        nets = list((container.addresses or {}).keys()) or ['podman']
        container.addresses = {
            n: [{'addr': ip, 'version': 4, 'port': None, 'subnet_id': None,
                 'preserve_on_delete': False}] for n in nets}

    def on_container_stopped(self, container):
        return None
