package algo

// kindNames holds each Kind's name; index 0 is the zero Kind, which is no algorithm.
var kindNames = [...]string{
	"none",
	KindFixed:     "rl.fixed",
	KindSlide:     "rl.slide",
	KindLog:       "rl.log",
	KindToken:     "rl.token",
	KindGCRA:      "rl.gcra",
	KindLeaky:     "rl.leaky",
	KindThrottle:  "cl.throttle",
	KindLease:     "rl.lease",
	KindRedisGCRA: "gcra",
}

// String is the name TYPE answers: "rl.fixed", "rl.slide", "rl.log", "rl.token",
// "rl.gcra", "rl.leaky", "cl.throttle", "rl.lease", and "gcra" as Redis names its GCRA
// keys' type; "none" for the zero Kind or an
// unknown one, as TYPE answers for an absent key.
func (k Kind) String() string {
	if int(k) >= len(kindNames) {
		return kindNames[0]
	}
	return kindNames[k]
}

// Command is the command's name in lower case as Redis spells it in errors: "rl.fixed", ...,
// "cl.throttle", "gcra", and "rl.acquire" for KindLease. It is the same text as String, since TYPE
// answers the command's name, except for leases: three commands share that kind, and
// TYPE names the kind, "rl.lease".
func (k Kind) Command() string {
	if k == KindLease {
		return "rl.acquire"
	}
	return k.String()
}
