"""The simulated cloud: an in-process provider for the demo, the engine tests, the benchmarks and the replay."""
