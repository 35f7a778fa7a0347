// The libev driver and the C ABI of Include/tether.h arrive here (issue 3).
