# watchdog/fake.cmake - filled in by its component.
