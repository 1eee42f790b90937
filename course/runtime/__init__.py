"""What this machine is and what it may run: the hardware tier, the one
live-or-fallback policy, recorded results, and the watchdog for launches that may hang."""
