"""The built-in construction graphs, one module each, registered by name with
:func:`benchsmith.construction.graph` when ``GRAPHS`` first looks a name up."""
