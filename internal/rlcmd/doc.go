// Package rlcmd is the argument grammar of rlserver's rate-limiting commands, in both
// directions: Parse* read the words of RL.FIXED, RL.SLIDE, RL.LOG, RL.TOKEN, RL.GCRA,
// RL.LEAKY, CL.THROTTLE, Redis's GCRA, RL.ALL, RL.SLICE, RL.ACQUIRE and RL.RENEW after the key
// into algo's requests, as the server does; Append* write a request back as words,
// as the Go client and the test lab send it. One package for both, so that what the
// client sends is what the server reads (FuzzRoundTrip checks it).
//
// Errors are *reply.Error, whose text is the Redis error reply, whole, from package
// reply's list: the server writes it as it is and the Go client recognises it.
// Integers are spelled as Redis reads them (ParseInt): optional '-', no '+', no
// leading zeros, no spaces.
package rlcmd
