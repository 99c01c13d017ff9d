# service/engine.cmake - filled in by its component.
