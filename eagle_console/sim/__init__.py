"""The simulated PCIe node (sim.md): real processes, signals, files and a loopback HTTP server."""
