package algo

// kindNames holds each Kind's name; index 0 is the zero Kind, which is no algorithm.
var kindNames = [...]string{
	"none",
	KindFixed:    "rl.fixed",
	KindSlide:    "rl.slide",
	KindLog:      "rl.log",
	KindToken:    "rl.token",
	KindGCRA:     "rl.gcra",
	KindLeaky:    "rl.leaky",
	KindThrottle: "cl.throttle",
}

// String is the name TYPE answers: "rl.fixed", "rl.slide", "rl.log", "rl.token",
// "rl.gcra", "rl.leaky", "cl.throttle"; "none" for the zero Kind or an unknown one,
// as TYPE answers for an absent key.
func (k Kind) String() string {
	if int(k) >= len(kindNames) {
		return kindNames[0]
	}
	return kindNames[k]
}

// Command is the command's name in lower case as Redis spells it in errors: "rl.fixed", ...,
// "cl.throttle". It is the same text as String, since TYPE answers the command's name.
func (k Kind) Command() string { return k.String() }
