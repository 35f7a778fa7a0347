// tether-edge: the reference edge server command line.
print("tether-edge: not built yet")
