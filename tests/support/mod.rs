//! Support for the end-to-end tests: spawning real binaries, free ports, temp dirs.
