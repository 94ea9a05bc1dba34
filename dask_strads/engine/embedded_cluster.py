"""The embedded cluster's class (see :func:`.runtime.embedded_client`), in a module of its own
so that only starting it imports distributed."""
from distributed import LocalCluster
from distributed.utils import format_dashboard_link


class EmbeddedCluster(LocalCluster):
    """A ``LocalCluster`` of worker threads in this process, listening on 127.0.0.1."""

    @property
    def dashboard_link(self):
        """On 127.0.0.1, where it listens (the inproc address names the host's)."""
        port = self.scheduler_info.get("services", {}).get("dashboard")
        return format_dashboard_link("127.0.0.1", port) if port else ""
