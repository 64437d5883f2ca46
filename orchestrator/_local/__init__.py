"""Local (embedded) mode: the whole job in one process, same pipeline, same results."""
