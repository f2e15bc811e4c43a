package push

// MaxConcurrency caps DefaultConcurrency, as Istio caps PILOT_PUSH_THROTTLE.
const MaxConcurrency = 100

// DefaultConcurrency is Istio's default push throttle for a machine with cores CPU cores:
// min(15 + 5 × cores, 100). The caller passes the core count from its configuration
// (cmd/ reads runtime.GOMAXPROCS); fewer than 1 core counts as 1.
func DefaultConcurrency(cores int) int {
	return min(15+5*max(cores, 1), MaxConcurrency)
}
