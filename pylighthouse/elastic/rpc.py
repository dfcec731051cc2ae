"""The elasticslice client endpoint: a manager's revocation calls over XML-RPC."""
import threading
import xmlrpc.client
from typing import Any, Callable, Dict, List, Optional, Tuple
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

from ..errors import LighthouseException
from ..service import BoundedThreads
from .manager import ElasticManager, _ManagerClosed
from .store import StoreError

__all__ = ["serve_rpc", "RPCServer", "SUCCESS", "BADARGS", "ERROR"]

#: ProtoGENI response codes: the call worked.
SUCCESS = 0
#: The arguments were wrong.
BADARGS = 1
#: Something else went wrong.
ERROR = 2


class _Quiet(SimpleXMLRPCRequestHandler):
    """A request handler that writes no log line per request, and drops a
    client silent for ``timeout`` seconds."""

    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass


class RPCServer(BoundedThreads, SimpleXMLRPCServer):
    """A running XML-RPC server in a thread of its own (see :func:`serve_rpc`).

    ``server_address`` is the ``(host, port)`` it listens on;
    :meth:`shutdown` stops it and closes its socket. Each connection is
    served in a thread of its own (the manager's lock serialises the
    calls), so that a client that connects and sends nothing holds up
    neither the others nor :meth:`shutdown`; it is dropped after 30
    seconds. At most ``max_connections`` (32) are served at once; one more
    is closed at once (the provider's calls are few, and each waits for
    the manager's lock).
    """

    block_on_close = False
    max_connections = 32

    def __init__(self, address: Tuple[str, int]):
        super().__init__(address, requestHandler=_Quiet, allow_none=False,
                         logRequests=False)
        self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                        name="pylighthouse-rpc")

    def _marshaled_dispatch(self, data: Any, dispatch_method: Any = None,
                            path: Any = None) -> Any:
        """Answer a body that is not an XML-RPC call (malformed XML, a value
        XML-RPC cannot read, such as ``<int>abc</int>``) with a code 1
        struct, as a bad parameter is, not a fault; else dispatch as
        usual. (The body is read twice: a provider's calls are few.)"""
        # (typed loosely: typeshed says the answer is str, CPython gives bytes)
        try:
            _, method = xmlrpc.client.loads(data, use_builtin_types=self.use_builtin_types)
            problem = None if method is not None else "no methodName"
        except Exception as error:  # (whatever the parser raises: never a fault)
            problem = f"{type(error).__name__}: {error}"
        if problem is not None:
            answer = _response(BADARGS, "", f"not an XML-RPC call: {problem}")
            return xmlrpc.client.dumps((answer,), methodresponse=True, allow_none=False,
                                       encoding=self.encoding).encode(
                                           self.encoding, "xmlcharrefreplace")
        return super()._marshaled_dispatch(data, dispatch_method, path)

    def start(self) -> "RPCServer":
        self._thread.start()
        return self

    def shutdown(self) -> None:
        """Stop serving, wait for the thread, close the socket (only close
        it when it was never started)."""
        if self._thread.ident is not None:
            super().shutdown()
            self._thread.join()
        self.server_close()


def serve_rpc(manager: ElasticManager, host: str = "127.0.0.1", port: int = 0) -> RPCServer:
    """Serve ``manager``'s provider-facing methods over XML-RPC; return the running server.

    The methods are elasticslice's: ``GetVersion``, ``NotifyDeletePending``,
    ``NotifyDeleteComplete`` and ``SetResourceValues``, each taking one
    struct (the last three with ``nodelist``). Each answers a ProtoGENI
    response struct ``{"code": 0, "value": ..., "output": ""}``. Bad
    parameters answer ``code`` 1 and the error message in ``output``, and
    so does a body that is not an XML-RPC call; any other failure (a store
    that cannot be written, a closed manager) code 2;
    only a method that is not one of these answers a fault (XML-RPC's own).
    ``port=0`` picks a free port (read it from ``server_address``). The
    manager's lock serialises these calls with its manage loop.
    """
    return answer_for(manager, RPCServer((host, port))).start()


def answer_for(manager: ElasticManager, server: RPCServer) -> RPCServer:
    """Register ``manager``'s methods (see :func:`serve_rpc`) on ``server``,
    bound and not yet started: a caller can bind the address before it has
    a manager, and refuse a busy one before anything is made."""
    methods: Dict[str, Callable[[Any], Any]] = {
        "GetVersion": lambda params: manager.get_version(),
        "NotifyDeletePending": manager.notify_delete_pending,
        "NotifyDeleteComplete": manager.notify_delete_complete,
        "SetResourceValues": manager.set_resource_values,
    }
    for name, method in methods.items():
        server.register_function(_answering(method, name), name)
    return server


def _answering(method: Callable[[Any], Any], name: str) -> Callable[..., Dict[str, Any]]:
    def call(params: Any = None, *extra: Any) -> Dict[str, Any]:
        if extra:
            return _response(BADARGS, "", f"{name}: takes one struct, got {1 + len(extra)} "
                                          "arguments")
        if name != "GetVersion" and not isinstance(params, dict):
            return _response(BADARGS, "", f"{name}: expected a struct with 'nodelist'")
        if params is None:  # (GetVersion called without its struct: nothing to echo)
            params = {}
        if name == "NotifyDeletePending":
            # (its answer echoes the entries given: what XML-RPC cannot
            # carry back, a nil or an integer past 32 bits, is refused
            # before anything changes, not answered with a fault after)
            problem = _unanswerable(params)
            if problem is not None:
                return _response(BADARGS, "", f"{name}: {problem}, which XML-RPC cannot "
                                              "answer (the answer echoes the entries)")
        try:
            value = method(params)
        except (StoreError, _ManagerClosed) as error:  # (not the caller's arguments)
            return _response(ERROR, "", f"{name}: {error}")
        except LighthouseException as error:
            return _response(BADARGS, "", f"{name}: {error}")
        except Exception as error:  # never a fault: the caller gets a code
            return _response(ERROR, "", f"{name}: {type(error).__name__}: {error}")
        return _response(SUCCESS, value, "")
    return call


def _unanswerable(params: Any) -> Optional[str]:
    """Where in ``params`` (a struct) the first value XML-RPC cannot send
    back is, and what it is (``None`` if there is none): ``nodelist[0].note:
    nil``."""
    try:
        xmlrpc.client.dumps((params,), allow_none=False)
        return None
    except (TypeError, OverflowError, ValueError) as error:
        failure = f"{type(error).__name__}: {error}"
    except RecursionError:
        return _too_deep(params)
    stack: List[Tuple[str, Any]] = [("", params)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{key}" if where else str(key), item)
                         for key, item in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{where}[{index}]", item)
                         for index, item in reversed(list(enumerate(value))))
        elif value is None:
            return f"{where}: nil"
        elif isinstance(value, int) and not isinstance(value, bool) \
                and not -2 ** 31 <= value < 2 ** 31:
            return f"{where}: {value}, past 32 bits"
        else:
            try:
                xmlrpc.client.dumps((value,), allow_none=False)
            except (TypeError, OverflowError, ValueError) as error:
                return f"{where}: {type(error).__name__}: {error}"
    return f"a value: {failure}"


def _too_deep(params: Dict[str, Any]) -> str:
    """The place of the first value of ``params`` nested too deep for
    XML-RPC, named down to an entry's field (``nodelist[0].note``)."""
    for key, value in params.items():
        listed = isinstance(value, list)
        for index, item in enumerate(value if listed else [value]):
            where = f"{key}[{index}]" if listed else str(key)
            fields = item.items() if isinstance(item, dict) else [("", item)]
            for field, inner in fields:
                try:
                    xmlrpc.client.dumps((inner,), allow_none=True)
                except RecursionError:
                    return f"{where}.{field}: nested too deep" if field else \
                        f"{where}: nested too deep"
                except Exception:  # noqa: BLE001 - only the depth is looked for here
                    pass
    return "a value nested too deep"


def _response(code: int, value: Any, output: str) -> Dict[str, Any]:
    return {"code": code, "value": value, "output": output}
