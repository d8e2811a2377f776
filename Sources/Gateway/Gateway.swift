// The gateway (being written).
