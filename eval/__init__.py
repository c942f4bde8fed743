"""The embedded evaluator: scorers, importers and runners for tool-use benchmarks. Nothing is exported yet."""
