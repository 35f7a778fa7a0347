// SPDX-License-Identifier: Apache-2.0
// tether-edge: the reference edge server command line (serve, token, kick).
EdgeMain.run()
