"""`eagle-console demo`: a simulated PCIe node and a Phase 0 plan on it, walkable in a minute."""
