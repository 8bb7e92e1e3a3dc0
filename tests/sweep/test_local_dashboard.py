"""A local sweep's cluster opens no dashboard, and its scheduler's HTTP server takes a free
loopback port: at Dask's default 8787, every sweep beside another (or beside anything on
8787) printed a four-line "Port 8787 is already in use" UserWarning."""

from __future__ import annotations

import socket
import warnings

import pytest

from embsim.sweep.local import _close_quietly, local_client


@pytest.mark.parametrize("processes", [False, True])
def test_no_dashboard_and_no_port_warning(processes):
    busy = socket.socket()
    try:
        busy.bind(("127.0.0.1", 8787))
        busy.listen()
    except OSError:
        pass                  # already taken by something else: busy all the same
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cluster, client = local_client(1, processes)
        try:
            http = cluster.scheduler.http_server
            assert (http.address, http.port != 8787) == ("127.0.0.1", True)
            assert client.submit(sum, [1, 2]).result() == 3
        finally:
            _close_quietly(client, cluster)
    finally:
        busy.close()
