"""The Dask scheduler of ``--scheduler-address`` / ``--scheduler-file``, checked before a client
connects: a missing scheduler file, an address of no known kind, a refused or unanswered port,
a server that is no Dask scheduler are one line within seconds (a ``distributed.Client``
retries for its whole timeout, and one that failed to connect takes a minute more to close,
with a traceback)."""
import asyncio
import json
import os
import socket

from ..local_files import check_regular_file
from ..log import logger
from .parameters import UsageError

#: Seconds a scheduler's port has to accept a connection.
CONNECT_SECONDS = 5
#: Seconds the client then has for its handshake with the scheduler.
CLIENT_SECONDS = 30
#: Address kinds that name a TCP host and port, which can be tried first.
TCP_SCHEMES = ("tcp", "tls", "ws", "wss")


def connect(args):
    """The client of the scheduler the arguments name, else None (the embedded default)."""
    if not (args.scheduler_address or args.scheduler_file):
        return None
    from distributed import Client

    address = (args.scheduler_address if args.scheduler_address
               else address_in(args.scheduler_file))
    logger.info("connecting to the Dask scheduler at %s", address)
    check_reachable(address)
    return Client(address, set_as_default=False, timeout=CLIENT_SECONDS)


def address_in(path):
    """The scheduler address a ``dask scheduler --scheduler-file`` file holds."""
    check_regular_file(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"the scheduler file {path} does not exist: start the scheduler "
                                f"with `dask scheduler --scheduler-file {path}` first, or give "
                                "--scheduler-address")
    try:
        with open(path) as file:
            return json.load(file)["address"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{path} is no scheduler file: expected the JSON object `dask "
                         "scheduler --scheduler-file` writes, with an address") from None


def check_reachable(address):
    """Raise a UsageError for an address of no known kind, a ConnectionError when its TCP port
    refuses or does not answer within CONNECT_SECONDS, or what answers is no Dask
    scheduler."""
    from distributed.comm import get_address_host_port, parse_address
    from distributed.comm.registry import get_backend

    scheme, _ = parse_address(address, strict=False)
    try:
        get_backend(scheme)
    except ValueError:
        raise UsageError(f"unknown kind of address {address!r}: give one such as "
                         "tcp://HOST:8786") from None
    if scheme not in TCP_SCHEMES:
        return
    try:
        host, port = get_address_host_port(address)
    except ValueError as error:
        raise UsageError(f"cannot connect to {address!r}: {error}") from None
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except ConnectionRefusedError:
        raise ConnectionError(f"nothing listens at {address} (connection refused): is the "
                              "scheduler running, and is this its address?") from None
    except socket.timeout:
        raise ConnectionError(f"no answer from {address} within {CONNECT_SECONDS} s: the host "
                              "is unreachable, or a firewall drops the connection") from None
    except socket.gaierror as error:
        raise ConnectionError(f"cannot reach {address}: unknown host ({error})") from None
    except OSError as error:
        raise ConnectionError(f"cannot reach {address}: {error.strerror or error}") from None
    try:
        identity = asyncio.run(_identity(address))
    except Exception as error:  # whatever a foreign server's bytes make of Dask's handshake
        raise ConnectionError(f"{address} answers, but not as a Dask scheduler does "
                              f"({type(error).__name__}: {str(error)[:80]})") from None
    if identity.get("type") != "Scheduler":
        raise ConnectionError(f"{address} is a Dask {identity.get('type', 'server')}, not the "
                              "scheduler: give the scheduler's address")


async def _identity(address):
    """What the server at ``address`` says it is, asked as a client would."""
    from distributed.comm import connect
    from distributed.security import Security

    comm = await connect(address, timeout=CONNECT_SECONDS,
                         **Security().get_connection_args("client"))
    try:
        await comm.write({"op": "identity", "reply": True})
        return await asyncio.wait_for(comm.read(), CONNECT_SECONDS)
    finally:
        comm.abort()
