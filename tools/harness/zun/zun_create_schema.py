"""Creates Zun's database: zun_create_schema.py ZUN_CONF.

`zun-db-manage upgrade` stops on sqlite (its migrations ALTER constraints, which sqlite cannot),
so the tables are made from the models, as Zun's own unit tests do, and alembic is stamped head.
"""
import sys

from alembic import command
from oslo_db.sqlalchemy import enginefacade
from zun.common import service
from zun.db.sqlalchemy import migration, models

service.prepare_service(['zun-db', '--config-file', sys.argv[1]])
engine = enginefacade.writer.get_engine()
models.Base.metadata.create_all(engine)
config = migration._alembic_config()
config.set_main_option('sqlalchemy.url', str(engine.url))
command.stamp(config, 'head')
print('zun schema at', migration.version(engine=engine))
