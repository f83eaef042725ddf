// SPDX-License-Identifier: MIT
// An uncaught C++ exception: fault_cxx main|worker|hot. std::terminate
// prints its line on stderr and aborts; the trace must hold every call.
#include "fault.h"

#include <stdexcept>
#include <thread>

static void thrower()
{
	calls(300);
	report();
	if (FAULT_GET(&fault_shm->started))
		take_snapshot();
	throw std::runtime_error("the device said no");
}

int main(int argc, char **argv)
{
	std::string where = argc > 1 ? argv[1] : "main";

	fault_init();
	calls(1000);
	report();
	start_quiet(2, 500);
	if (where == "hot")
		start_hot(2);
	if (where == "worker") {
		std::thread t(thrower);
		t.join();
		return 1;
	}
	thrower();
	return 1;
}
