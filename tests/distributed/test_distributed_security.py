"""``--dask local:N`` listens on the loopback interface only: the scheduler, the
nannies, the workers and the scheduler's HTTP server, with no dashboard unless
``--dask-dashboard HOST:PORT`` asks for one; bad dashboard addresses and Dask's
TLS settings give typed errors."""

import gc
import ipaddress
import logging
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.distributed.cluster import connect
from fstcrf.errors import FstcrfError, SchedulerError
from fstcrf.model import ChainCRF

dask = pytest.importorskip("dask")
pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

DATA = Path(__file__).resolve().parents[2] / "fstcrf" / "data"


def listening_sockets() -> list[tuple[int, str, int]]:
    """(pid, ip, port) of every listening TCP socket of this process and its descendants."""
    me = psutil.Process()
    sockets = []
    for process in [me, *me.children(recursive=True)]:
        for connection in process.net_connections(kind="inet"):
            if connection.status == psutil.CONN_LISTEN:
                sockets.append((process.pid, connection.laddr.ip, connection.laddr.port))
    return sockets


def not_on_loopback(sockets: list[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    return [socket for socket in sockets if not ipaddress.ip_address(socket[1]).is_loopback]


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refusal:
        return refusal.code


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "demo.fcrf"
    ChainCRF(max_iter=3, threads=1).fit(read_conll(DATA / "demo_test.txt")).save(path)
    return path


@pytest.mark.slow
def test_local_cluster_listens_on_loopback_only_and_serves_no_dashboard():
    before = {socket[1:] for socket in listening_sockets()}
    with connect("local:2") as client:
        sockets = [socket for socket in listening_sockets() if socket[1:] not in before]
        me = psutil.Process().pid
        workers = {pid for pid, _, _ in sockets if pid != me}
        assert len(workers) == 2, sockets  # the worker processes were looked at
        assert len([socket for socket in sockets if socket[0] == me]) >= 3, sockets  # scheduler, nannies
        assert not_on_loopback(sockets) == []
        addresses = [client.scheduler.address, *client.scheduler_info()["workers"]]
        assert all(address.startswith("tcp://127.0.0.1:") for address in addresses), addresses


@pytest.mark.slow
def test_dask_dashboard_opens_the_dashboard_on_the_address_asked_for():
    with connect("local:1", dashboard="127.0.0.1:0") as client:
        sockets = listening_sockets()
        assert not_on_loopback(sockets) == []
        assert client.dashboard_link.startswith("http://127.0.0.1:")
        port = int(client.dashboard_link.split(":")[2].split("/")[0])
        assert (psutil.Process().pid, "127.0.0.1", port) in sockets
        assert http_status(client.dashboard_link) == 200  # the dashboard, or Dask's page asking for bokeh


@pytest.mark.parametrize(
    "address",
    [
        ":8787",
        "8787",
        "localhost",
        "127.0.0.1:99999",
        "[::1]:8787",
        "127.0.0.1:port",
        "127.0.0.1:8787,0.0.0.0:8788",
        "",
    ],
)
def test_a_bad_dashboard_address_is_refused_before_dask_starts(address):
    with pytest.raises(FstcrfError, match="--dask-dashboard takes HOST:PORT"):
        with connect("local:1", dashboard=address):
            pass


def test_a_dashboard_is_refused_for_a_remote_scheduler():
    with pytest.raises(FstcrfError, match=r"LocalCluster \(--dask local:N\)"):
        with connect("tcp://127.0.0.1:9", dashboard="127.0.0.1:0"):
            pass


def test_a_dashboard_address_that_cannot_be_bound_is_a_typed_error():
    before = set(psutil.Process().children(recursive=True))
    with pytest.raises(FstcrfError, match="dashboard on 192.0.2.1:8787: OSError"):  # TEST-NET-1, not ours
        with connect("local:1", dashboard="192.0.2.1:8787"):
            pass
    assert [
        child
        for child in psutil.Process().children(recursive=True)
        if child not in before and child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    ] == []


def _open_clients() -> list:
    """The dask Clients still in memory (reachable or not) that are not closed."""
    from distributed import Client

    return [item for item in gc.get_objects() if issubclass(type(item), Client) and item.status != "closed"]


def test_dask_tls_settings_that_refuse_a_scheduler_are_a_scheduler_error():
    # and the Client each failure half made is closed at once: left to the garbage
    # collector, its __del__ ran in a thread Dask was starting for the next client,
    # and the two waited for each other for ever (a hang seen in CI)
    before = _open_clients()
    with dask.config.set({"distributed.comm.tls.ca-file": None, "distributed.comm.tls.client.cert": None}):
        with pytest.raises(SchedulerError, match="docs/distributed.md"):  # no certificates configured
            with connect("tls://127.0.0.1:9", timeout=1):
                pass
    assert _open_clients() == before
    with dask.config.set({"distributed.comm.require-encryption": True}):
        with pytest.raises(SchedulerError, match="encryption required"):
            with connect("tcp://127.0.0.1:9", timeout=1):
                pass
    assert _open_clients() == before
    with pytest.raises(SchedulerError, match="cannot reach"):
        with connect("tcp://127.0.0.1:9", timeout=0.5):
            pass
    assert _open_clients() == before


@pytest.mark.slow
def test_cli_tag_opens_the_dashboard_it_is_asked_for(model_path, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        assert (
            main(
                [
                    "tag",
                    str(model_path),
                    str(DATA / "demo_test.txt"),
                    "-o",
                    str(tmp_path / "out.txt"),
                    "--dask",
                    "local:1",
                    "--dask-dashboard",
                    "127.0.0.1:0",
                ]
            )
            == 0
        )
    assert "Dask dashboard (no authentication) at http://127.0.0.1:" in caplog.text


@pytest.mark.parametrize("command", ["train", "tag"])
def test_cli_refuses_bad_dashboard_options(command, model_path, tmp_path, capsys):
    data = str(DATA / "demo_test.txt")
    start = (
        ["train", data, "-o", str(tmp_path / "m.fcrf")]
        if command == "train"
        else ["tag", str(model_path), data, "-o", str(tmp_path / "out.txt")]
    )
    assert main(["-q", *start, "--dask", "local:1", "--dask-dashboard", ":8787"]) == 2
    assert "--dask-dashboard takes HOST:PORT" in capsys.readouterr().err
    assert main(["-q", *start, "--dask", "tcp://127.0.0.1:9", "--dask-dashboard", "127.0.0.1:0"]) == 2
    assert "LocalCluster (--dask local:N)" in capsys.readouterr().err
    assert main(["-q", *start, "--dask-dashboard", "127.0.0.1:0"]) == 2
    assert "--dask-dashboard applies to --dask local:N" in capsys.readouterr().err
