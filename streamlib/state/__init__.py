"""State stores: RocksDB copies per task, backed by changelog topics (see DESIGN.md).

Stores work on bytes; serdes are applied by the layer above.
"""
from streamlib.state.kv import KeyValueStore
from streamlib.state.readonly import ReadOnlyKeyValueStore, open_read_only_store
from streamlib.state.rocksdb import StoreLockTimeout
from streamlib.state.task import StoreSpec, TaskStores, open_task_stores
from streamlib.state.timestamped import decode_timestamped, encode_timestamped

__all__ = [
    "KeyValueStore", "ReadOnlyKeyValueStore", "StoreLockTimeout", "StoreSpec", "TaskStores",
    "decode_timestamped", "encode_timestamped", "open_read_only_store", "open_task_stores",
]
