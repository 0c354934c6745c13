"""A TCP proxy in front of one node, for one link (a replica's connection
to its primary): `cut()` drops the link's connections and refuses new
ones until `heal()`. A partition without root or network namespaces, so
the suite runs the same on any machine.
"""
import socket
import threading

from nodes import free_port


class Proxy:
    def __init__(self, target_port, name=""):
        self.target_port = target_port
        self.name = name
        self.port = free_port()
        self.cut_now = False
        self.lock = threading.Lock()
        self.conns = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(64)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name=f"proxy-{name}").start()

    def retarget(self, port):
        """Points the link at another node (after a failover); drops the
        connections to the old one."""
        with self.lock:
            self.target_port = port
        self._drop_all()

    def cut(self):
        with self.lock:
            self.cut_now = True
        self._drop_all()

    def heal(self):
        with self.lock:
            self.cut_now = False

    def close(self):
        self.closed = True
        self.cut()
        try:
            self.listener.close()
        except OSError:
            pass

    def _drop_all(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                refused = self.cut_now
                target = self.target_port
            if refused:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", target), timeout=2)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
