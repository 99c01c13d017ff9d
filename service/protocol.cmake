# service/protocol.cmake - filled in by its component.
