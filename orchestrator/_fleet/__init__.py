"""Fleet mode: submit jobs to the broker, watch and collect them through the store."""
