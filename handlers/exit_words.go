package handlers

import (
	"strconv"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// exitWords says how an attempt ended, led by lead ("exit", "exit code"). A process
// node reports -1 for a process killed by a signal (or whose supervisor vanished); a
// container runtime and a shell report 128+n for one killed by signal n. Either is no
// code the job chose: the words say so. stopped: Gantry asked it to stop (a cancel, a
// preemption, a hold…), so a signal was expected.
func exitWords(lead string, code int, stopped bool) string {
	if code == -1 {
		if stopped {
			return "stopped by a signal, as asked"
		}
		return "killed, without an exit code"
	}
	words := lead + " " + strconv.Itoa(code)
	name := agentapi.ExitSignal(code)
	switch {
	case name == "":
		return words
	case stopped:
		return words + ": stopped by " + name + ", as asked"
	case name == "SIGKILL":
		// The kernel's out-of-memory killer is the usual sender nobody asked for.
		return words + ": killed by SIGKILL (out of memory, often)"
	}
	return words + ": killed by " + name
}
