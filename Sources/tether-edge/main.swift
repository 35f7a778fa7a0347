// tether-edge: the reference edge server command line (serve, token, kick).
EdgeMain.run()
