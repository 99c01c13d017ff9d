# Network and IPC attempts. Arguments: host_tcp_port (a listener of the
# test on 127.0.0.1), zmq_port (the daemon's ZeroMQ endpoint, or 0).
# Prints "name: DENIED (why)" / "name: ALLOWED (what)". Without net:egress
# the job has its own network namespace with only loopback: listening,
# also without bind(), UDP
# to loopback and NETLINK_ROUTE work there and reach nothing else (the test
# checks that the host side saw nothing).
import errno, socket, sys

port, zport = int(sys.argv[1]), int(sys.argv[2])

def report(name, ok, what):
    print("%s: %s (%s)" % (name, "ALLOWED" if ok else "DENIED", what))

def attempt(name, fn):
    try:
        what = fn()
        report(name, True, what or "ok")
    except OSError as e:
        report(name, False, errno.errorcode.get(e.errno, str(e)))

def tcp4():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("127.0.0.1", port))
    s.sendall(b"hello from a job\n")
    return "connected to 127.0.0.1:%d" % port

def tcp4_out():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("192.0.2.1", 80))  # TEST-NET-1: never routable
    return "connected"

def udp4():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("127.0.0.1", port))
    return "sent"

def udp4_out():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("192.0.2.1", 9))  # TEST-NET-1
    return "sent"

def udp6_out():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.sendto(b"x", ("2001:db8::1", 9))  # documentation prefix
    return "sent"

def tcp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("::1", port))
    return "connected"

def udp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.sendto(b"x", ("::1", port))
    return "sent"

def listen_tcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("0.0.0.0", 0))
    s.listen(1)
    return "listening on %d" % s.getsockname()[1]

def listen_tcp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.bind(("::", 0))
    s.listen(1)
    return "listening on %d" % s.getsockname()[1]

def listen_unbound():
    # listen() without bind(): the kernel picks a port on every address
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.listen(1)
    return "listening on 0.0.0.0:%d" % s.getsockname()[1]

def proto(p, kind=socket.SOCK_STREAM, fam=socket.AF_INET):
    def fn():
        socket.socket(fam, kind, p).close()
        return "protocol %d socket" % p
    return fn

def zmq():
    if not zport:
        raise OSError(errno.ENOENT, "no zmq endpoint")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("127.0.0.1", zport))
    # a ZMTP 3.0 greeting with the NULL mechanism, then a run request
    s.sendall(b"\xff" + b"\0" * 8 + b"\x7f\x03\x00" + b"NULL" + b"\0" * 16 + b"\0" + b"\0" * 31)
    s.sendall(b'\x00\x40{"type":"run","id":"zmq-escape","runtime":"sh","code":"echo pwned"}')
    try:
        data = s.recv(64)
    except OSError:
        data = b""
    return "connected; %d bytes back" % len(data)

def raw():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    return "raw packet socket"

def netlink():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    return "netlink socket"

def netlink_audit():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)
    return "netlink audit socket"

for name, fn in (("tcp4_connect_host", tcp4), ("tcp4_outbound", tcp4_out),
                 ("udp4_send", udp4), ("udp4_outbound", udp4_out),
                 ("tcp6_connect", tcp6), ("udp6_send", udp6), ("udp6_outbound", udp6_out),
                 ("tcp4_listen", listen_tcp), ("tcp6_listen", listen_tcp6),
                 ("tcp4_listen_unbound", listen_unbound),
                 ("mptcp_socket", proto(262)), ("sctp_socket", proto(132)),
                 ("udplite_socket", proto(136, socket.SOCK_DGRAM, socket.AF_INET6)),
                 ("zmq_port", zmq), ("packet_socket", raw), ("netlink_socket", netlink),
                 ("netlink_audit", netlink_audit)):
    attempt(name, fn)
