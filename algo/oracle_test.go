package algo

// Tests against the definitions, not against ourselves.
//
// The oracle below implements each command's definition, as the contract writes it, in
// exact arithmetic: plain integers where the definition is integral (RL.FIXED, RL.LOG,
// and RL.GCRA, RL.LEAKY, CL.THROTTLE and Redis's GCRA, whose emission interval T is an
// integer number of µs; RL.SLIDE's test too, multiplied by W), math/big.Rat where it is
// not (RL.TOKEN, and RL.SLIDE's margins). It reads the command's
// arguments as a caller writes them (an ospec), never a parsed Request, and calls no
// production function or helper: T, τ, ms(x) and the rest are derived again here. The
// production code runs through the usual machine and mustParse helpers.
//
// The integer algorithms must agree with the oracle on every reply field, always. For
// RL.SLIDE and RL.TOKEN the contract itself mandates float64, so the tests count how
// often the float answer differs from the exact one (logged with -v) and require that
// any difference is one float rounding can explain: the exact test misses by at most a
// few ulps, and no retry_after is ever one the production code itself refuses.
//
// The tests: TestOracleBurst (a burst admits exactly the capacity), TestOracleIntervals
// (k intervals later, k more), TestOracleSteady (10,000 intervals of steady calls),
// TestOracleSequences (random sequences, field by field), TestOracleFloatBoundaries
// (RL.SLIDE and RL.TOKEN where rounding decides) and TestOracleRegressions (the issue's
// cases). The default run (-oracle.n 3000) takes a few seconds under -race; every test
// logs its seed, and a failure names it. A longer run, every edge case included:
//
//	go test -run Oracle -oracle.n 1000000 ./algo     # a few minutes
//	go test -run Oracle -oracle.seed 42 -v ./algo     # replay a seed, print the float statistics

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// oracleDefaultN is -oracle.n's default, sized for a few seconds under -race.
const oracleDefaultN = 3000

var (
	oracleN    = flag.Int("oracle.n", oracleDefaultN, "random calls per algorithm in the oracle tests; the other oracle tests scale with it, and above the default take every edge case")
	oracleSeed = flag.Uint64("oracle.seed", 0, "seed of the oracle tests; 0 draws one (logged, to replay a failure)")
)

// oracleRand returns a generator for one test and logs its seed, so that any failure
// can be replayed with -oracle.seed.
func oracleRand(t *testing.T) (*rand.Rand, uint64) {
	t.Helper()
	seed := *oracleSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("-oracle.seed %d", seed)
	h := fnv.New64a() // each subtest its own stream from the one seed
	h.Write([]byte(t.Name()))
	return rand.New(rand.NewPCG(seed, h.Sum64())), seed
}

// ospec is one limiter's arguments as the caller writes them.
type ospec struct {
	kind               Kind
	limit, windowMs    int64 // RL.*
	rate, burst, queue int64 // RATE, BURST, QUEUE when > 0
	maxBurst, count    int64 // CL.THROTTLE
	periodS            int64
}

// oracleFamilies are the commands under test, as ospec templates.
var oracleFamilies = []ospec{{kind: KindFixed}, {kind: KindSlide}, {kind: KindLog}, {kind: KindToken},
	{kind: KindGCRA}, {kind: KindLeaky}, {kind: KindThrottle}}

// name is the command's name.
func (s ospec) name() string { return s.kind.String() }

func (s ospec) String() string { return s.name() + " " + s.args(1, false) }

// args is the command line after the key, with COST (CL.THROTTLE: quantity) and PEEK.
func (s ospec) args(cost int64, peek bool) string {
	switch {
	case s.kind == KindThrottle:
		return fmt.Sprint(s.maxBurst, " ", s.count, " ", s.periodS, " ", cost)
	}
	a := fmt.Sprint(s.limit, " ", s.windowMs)
	switch {
	case s.rate > 0:
		a += fmt.Sprint(" RATE ", s.rate)
	case s.burst > 0:
		a += fmt.Sprint(" BURST ", s.burst)
	case s.queue > 0:
		a += fmt.Sprint(" QUEUE ", s.queue)
	}
	a += fmt.Sprint(" COST ", cost)
	if peek {
		a += " PEEK"
	}
	return a
}

// request builds the request of the arguments (parse).
func (s ospec) request(t testing.TB, cost int64, peek bool) Request {
	t.Helper()
	return mustParse(t, s.kind, s.args(cost, peek))
}

// parses reports whether the arguments of s with this cost are within the contract.
func (s ospec) parses(cost int64) bool {
	_, err := parse(s.kind, s.args(cost, false))
	return err == nil
}

// windowUs is W in µs; CL.THROTTLE's period.
func (s ospec) windowUs() int64 {
	if s.kind == KindThrottle {
		return s.periodS * 1_000_000
	}
	return s.windowMs * 1000
}

// unit is the µs in one unit of the reply's durations: ms, or s for CL.THROTTLE.
func (s ospec) unit() int64 {
	if s.kind == KindThrottle {
		return 1_000_000
	}
	return 1000
}

// emission is the definition's T = max(1, round(W / n)) µs, rounding half up, i.e.
// floor(W/n + 1/2) = floor((2W + n) / (2n)): n is the limit (CL.THROTTLE and GCRA:
// tokens per period). TestOracleHalfWindows checks the integer form against rationals.
func (s ospec) emission() int64 {
	n := s.limitOrCount()
	return max(1, (2*s.windowUs()+n)/(2*n))
}

// emissionRat is T evaluated as written, floor(W/n + 1/2) on rationals.
func (s ospec) emissionRat() int64 {
	x := big.NewRat(s.windowUs(), s.limitOrCount())
	return max(1, ratFloor(x.Add(x, big.NewRat(1, 2))))
}

// bursts is b: BURST (default the limit) for RL.GCRA, max_burst+1 for CL.THROTTLE.
func (s ospec) bursts() int64 {
	switch {
	case s.kind == KindThrottle:
		return s.maxBurst + 1
	case s.burst > 0:
		return s.burst
	}
	return s.limit
}

// tokenRate is RL.TOKEN's refill per window, RATE or the capacity.
func (s ospec) tokenRate() int64 {
	if s.rate > 0 {
		return s.rate
	}
	return s.limit
}

// capacity is how many cost-1 calls a fresh key admits at one instant, by definition.
func (s ospec) capacity() int64 {
	switch s.kind {
	case KindGCRA, KindThrottle:
		return s.bursts()
	case KindLeaky:
		return s.queue + 1
	}
	return s.limit
}

// interval is the time one admission takes to come back, in µs, for a window the
// limit divides: W/L, or T for the GCRA family and RL.LEAKY (also W/L then), W/rate
// for RL.TOKEN.
func (s ospec) interval() int64 {
	switch s.kind {
	case KindGCRA, KindLeaky, KindThrottle:
		return s.emission()
	case KindToken:
		return s.windowUs() / s.tokenRate()
	}
	return s.windowUs() / s.limit
}

// horizon is the longest a state of s reaches ahead, in µs: tests stay below 2^52, as
// the property tests do, so that times stay exact float64 and no duration is capped.
func (s ospec) horizon() int64 {
	switch s.kind {
	case KindToken:
		return ratCeil(big.NewRat(s.limit*s.windowUs(), s.tokenRate()))
	case KindGCRA, KindThrottle:
		return s.emission() * s.bursts()
	case KindLeaky:
		return s.emission() * (s.queue + s.limit)
	}
	return 2 * s.windowUs()
}

// valid reports whether the production parser accepts s and it stays within horizon.
func (s ospec) valid() bool {
	return s.parses(1) && s.horizon() < 1<<52
}

// oentry is one admitted request in the oracle's RL.LOG.
type oentry struct{ ts, cost int64 }

// oracle is one key under the definition of its command.
type oracle struct {
	sp   ospec
	used bool // something was written: FIXED, SLIDE, LOG and TOKEN start fresh

	win, cur, prev int64    // FIXED: window, count; SLIDE: window, cur, prev
	log            []oentry // LOG, oldest first
	tokens         *big.Rat // TOKEN, at ts
	ts             int64
	tat            int64 // GCRA family and LEAKY; 0 is fresh (max(tat, now) = now)
}

// ocall is the oracle's answer to one call: the five wire fields, and the state to
// write when the call is allowed, costs something and is not PEEK.
type ocall struct {
	allowed bool
	wire    [5]int64
	commit  func()
}

// call decides one call and writes as the store would.
func (o *oracle) call(cost int64, peek bool, now int64) ocall {
	a := o.decide(cost, now)
	if a.allowed && cost > 0 && !peek {
		a.commit()
	}
	return a
}

// clone returns a copy that shares no memory with o (commit appends to the log).
func (o *oracle) clone() *oracle {
	c := *o
	c.log = slices.Clone(o.log)
	return &c
}

// passes is the oracle's decision alone, writing nothing.
func (o *oracle) passes(cost, now int64) bool { return o.decide(cost, now).allowed }

func (o *oracle) decide(c, now int64) ocall {
	switch o.sp.kind {
	case KindFixed:
		return o.fixed(c, now)
	case KindSlide:
		return o.slide(c, now)
	case KindLog:
		return o.logDecide(c, now)
	case KindToken:
		return o.token(c, now)
	case KindGCRA, KindThrottle:
		return o.gcra(c, now)
	case KindLeaky:
		return o.leaky(c, now)
	}
	panic("unknown kind")
}

// fixed: windows aligned to multiples of W; allowed iff count + c <= L; limited: the
// time to the next window, -1 if c > L; reset: to the window's end if it holds anything.
func (o *oracle) fixed(c, now int64) ocall {
	L, W := o.sp.limit, o.sp.windowUs()
	w := now / W
	count := int64(0)
	if o.used && o.win == w {
		count = o.cur
	}
	ok := c == 0 || count+c <= L
	after := count
	if ok {
		after += c
	}
	end := (w + 1) * W
	retry, reset := int64(0), int64(0)
	if !ok {
		retry = -1
		if c <= L {
			retry = ceilDiv(end-now, 1000)
		}
	}
	if after > 0 {
		reset = ceilDiv(end-now, 1000)
	}
	return ocall{ok, [5]int64{bool64(ok), L, max(0, L-after), retry, reset},
		func() { o.used, o.win, o.cur = true, w, after }}
}

// slideView is the SLIDE state rolled to now: window w, elapsed e, counts of w and w-1.
func (o *oracle) slideView(now int64) (w, e, cur, prev int64) {
	W := o.sp.windowUs()
	w = now / W
	e = now - w*W
	switch {
	case !o.used:
	case o.win == w:
		cur, prev = o.cur, o.prev
	case o.win == w-1:
		prev = o.cur
	}
	return
}

// slideMargin is L - (est + c), est = cur + prev·(W - elapsed)/W, exactly: the call
// passes iff it is >= 0.
func (o *oracle) slideMargin(c, now int64) *big.Rat {
	return big.NewRat(o.slideScaled(c, now), o.sp.windowUs())
}

// slideScaled is W·(L - (est + c)), an integer: the same test without a division, and
// in int64 (W < 2^45, and L, cur, prev and c stay below 2^18 here).
func (o *oracle) slideScaled(c, now int64) int64 {
	W := o.sp.windowUs()
	_, e, cur, prev := o.slideView(now)
	if max(c, cur, prev) >= 1<<18 {
		panic("slideScaled: a count past its int64 bound")
	}
	return (o.sp.limit-cur-c)*W - prev*(W-e)
}

// slide: allowed iff est + c <= L; remaining = floor(L - est'); retry_after the first ms
// the same call passes (est only falls while nothing is written); reset: to the end of
// the window after the one holding the newest count.
func (o *oracle) slide(c, now int64) ocall {
	L, W := o.sp.limit, o.sp.windowUs()
	w, _, cur, prev := o.slideView(now)
	ok := c == 0 || o.slideScaled(c, now) >= 0
	after := cur
	if ok {
		after += c
	}
	// L - est' = margin of a call of cost after - cur on the view.
	rem := max(0, floorDivInt(o.slideScaled(after-cur, now), W))
	retry, reset := int64(0), int64(0)
	switch {
	case ok:
	case c > L:
		retry = -1
	default:
		retry = firstUnit(now, 1000, func(t int64) bool { return o.slideScaled(c, t) >= 0 })
	}
	switch {
	case after > 0:
		reset = ceilDiv((w+2)*W-now, 1000)
	case prev > 0:
		reset = ceilDiv((w+1)*W-now, 1000)
	}
	return ocall{ok, [5]int64{bool64(ok), L, rem, retry, reset},
		func() { o.used, o.win, o.cur, o.prev = true, w, after, prev }}
}

// logDecide: an entry with ts <= now - W has left; allowed iff the live costs + c <= L;
// retry_after the first ms the same call passes; reset: until the newest entry leaves.
func (o *oracle) logDecide(c, now int64) ocall {
	L, W := o.sp.limit, o.sp.windowUs()
	live := o.liveLog(now)
	sum := int64(0)
	for _, e := range live {
		sum += e.cost
	}
	ok := c == 0 || sum+c <= L
	after := sum
	newest := int64(-1)
	if len(live) > 0 {
		newest = live[len(live)-1].ts
	}
	if ok && c > 0 {
		after += c
		newest = now
	}
	retry, reset := int64(0), int64(0)
	switch {
	case ok:
	case c > L:
		retry = -1
	default:
		retry = firstUnit(now, 1000, func(t int64) bool {
			s := int64(0)
			for _, e := range o.liveLog(t) {
				s += e.cost
			}
			return s+c <= L
		})
	}
	if newest >= 0 {
		reset = ceilDiv(newest+W-now, 1000)
	}
	return ocall{ok, [5]int64{bool64(ok), L, max(0, L-after), retry, reset},
		func() { o.used, o.log = true, append(live, oentry{now, c}) }}
}

func (o *oracle) liveLog(now int64) []oentry {
	i := 0
	for i < len(o.log) && o.log[i].ts <= now-o.sp.windowUs() {
		i++
	}
	return o.log[i:]
}

// tokensAt is min(capacity, tokens + (now - ts)·r/W), exactly; a new key is full.
func (o *oracle) tokensAt(now int64) *big.Rat {
	capa := rat(o.sp.limit)
	if !o.used {
		return capa
	}
	x := big.NewRat(max(0, now-o.ts)*o.sp.tokenRate(), o.sp.windowUs())
	x.Add(x, o.tokens)
	if x.Cmp(capa) > 0 {
		return capa
	}
	return x
}

// token: allowed iff tokens >= c; remaining = floor(tokens'); retry_after =
// ms((c - tokens)·W/r), -1 if c > capacity; reset = ms((capacity - tokens')·W/r).
func (o *oracle) token(c, now int64) ocall {
	L, W, r := o.sp.limit, o.sp.windowUs(), o.sp.tokenRate()
	tok := o.tokensAt(now)
	ok := c == 0 || tok.Cmp(rat(c)) >= 0
	after := new(big.Rat).Set(tok)
	if ok {
		after.Sub(after, rat(c))
	}
	retry := int64(0)
	switch {
	case ok:
	case c > L:
		retry = -1
	default:
		x := new(big.Rat).Sub(rat(c), tok)
		retry = ratCeil(x.Mul(x, big.NewRat(W, r*1000)))
	}
	full := new(big.Rat).Sub(rat(L), after)
	reset := ratCeil(full.Mul(full, big.NewRat(W, r*1000)))
	return ocall{ok, [5]int64{bool64(ok), L, ratFloor(after), retry, reset},
		func() { o.used, o.tokens, o.ts = true, after, now }}
}

// gcra, for RL.GCRA and CL.THROTTLE: τ = T·b; new_tat = max(tat, now) + T·c; allowed
// iff new_tat - τ <= now (RL.GCRA: COST 0 always). remaining = floor((τ - max(0, tat' -
// now))/T), clamped at 0; retry_after = ms(new_tat - τ - now), -1 if c > b; reset =
// ms(tat' - now). CL.THROTTLE answers limited, seconds, and -1 as retry when allowed.
func (o *oracle) gcra(c, now int64) ocall {
	cell := o.sp.kind == KindThrottle
	T, b, unit := o.sp.emission(), o.sp.bursts(), o.sp.unit()
	tau := T * b
	newTat := max(o.tat, now) + T*c
	ok := (c == 0 && !cell) || newTat-tau <= now
	after := o.tat
	if ok && c > 0 {
		after = newTat
	}
	ahead := max(0, after-now)
	retry := int64(0)
	switch {
	case ok && cell:
		retry = -1
	case ok:
	case c > b:
		retry = -1
	default:
		retry = ceilDiv(newTat-tau-now, unit)
	}
	flag := bool64(ok)
	if cell {
		flag = 1 - flag
	}
	rem := max(0, ratFloor(big.NewRat(tau-ahead, T)))
	return ocall{ok, [5]int64{flag, b, rem, retry, ceilDiv(ahead, unit)},
		func() { o.tat = after }}
}

// leaky: delay = max(tat, now) - now; allowed iff delay <= T·q, then tat = start + T·c.
// Field 4: ms(delay) when allowed, ms(delay - T·q) when limited; remaining =
// floor((T·q - max(0, tat' - now))/T) + 1, at least 0.
func (o *oracle) leaky(c, now int64) ocall {
	T, q := o.sp.emission(), o.sp.queue
	start := max(o.tat, now)
	delay := start - now
	ok := c == 0 || delay <= T*q
	after := o.tat
	if ok && c > 0 {
		after = start + T*c
	}
	ahead := max(0, after-now)
	f4 := ceilDiv(delay, 1000)
	if !ok {
		f4 = ceilDiv(delay-T*q, 1000)
	}
	rem := max(0, ratFloor(big.NewRat(T*q-ahead, T))+1)
	return ocall{ok, [5]int64{bool64(ok), o.sp.limit, rem, f4, ceilDiv(ahead, 1000)},
		func() { o.tat = after }}
}

// firstUnit is the smallest R >= 1 such that passes(now + R·unit), for a test that
// stays true once true (nothing is written meanwhile): ms(x) for the exact moment x.
func firstUnit(now, unit int64, passes func(int64) bool) int64 {
	hi := int64(1)
	for !passes(now + hi*unit) {
		hi *= 2
	}
	lo := hi/2 + 1 // passes(now + (lo-1)·unit) is false, or lo = 1
	if hi == 1 {
		return 1
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if passes(now + mid*unit) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

func bool64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ceilDiv is x/d rounded up for x > 0, and 0 for x <= 0: ms(x) for d = 1000.
func ceilDiv(x, d int64) int64 {
	if x <= 0 {
		return 0
	}
	return (x + d - 1) / d
}

// floorDivInt is a/b rounded down, for b > 0.
func floorDivInt(a, b int64) int64 {
	q := a / b
	if q*b > a {
		q--
	}
	return q
}

// ratFloor and ratCeil round a rational to an integer (big.Int.Div is Euclidean, a
// floor for the positive denominators big.Rat keeps).
func ratFloor(x *big.Rat) int64 { return new(big.Int).Div(x.Num(), x.Denom()).Int64() }
func ratCeil(x *big.Rat) int64  { return -ratFloor(new(big.Rat).Neg(x)) }

// The parameter space: limits 1..1000, windows 1 ms..a year, periods 1 s..a year.
var (
	oLimits  = []int64{1, 2, 3, 7, 10, 16, 80, 100, 400, 999, 1000}
	oWindows = []int64{1, 2, 3, 7, 10, 999, 1000, 1001, 60_000, 86_400_000, maxWindowMs}
	oPeriods = []int64{1, 2, 3, 7, 60, 3600, 86_400, maxPeriodS}
	oCounts  = []int64{1, 2, 3, 7, 30, 128, 640, 999, 1000}
)

// drawSpec draws a valid ospec: edges half of the time, windows the limit divides, W/L
// exactly x.5 µs (the rounding of T), or log-uniform values.
func drawSpec(rng *rand.Rand, f ospec) ospec {
	kind := f.kind
	for {
		s := ospec{kind: kind}
		if kind == KindThrottle {
			s.maxBurst = pick(rng, 0, 999, 0, 1, 2, 15, 999)
			s.count = pick(rng, 1, 1000, oCounts...)
			s.periodS = pick(rng, 1, maxPeriodS, oPeriods...)
			if rng.IntN(6) == 0 { // 1e6·p/n = x.5 for n in {128, 640} and p odd
				s.count = []int64{128, 640}[rng.IntN(2)]
				s.periodS |= 1
			}
		} else {
			s.limit = pick(rng, 1, 1000, oLimits...)
			s.windowMs = pick(rng, 1, maxWindowMs, oWindows...)
			switch rng.IntN(4) {
			case 0:
				s.windowMs = divisibleWindow(rng, s.limit)
			case 1:
				s.limit, s.windowMs = halfWindow(rng)
			}
			if rng.IntN(2) == 0 {
				switch kind {
				case KindToken:
					s.rate = pick(rng, 1, 1000, 1, 2, 3, 1000)
				case KindGCRA:
					s.burst = pick(rng, 1, 1000, 1, 2, 3, 1000)
				case KindLeaky:
					s.queue = pick(rng, 1, 999, 1, 2, 3, 999)
				}
			}
		}
		if s.valid() {
			return s
		}
	}
}

// divisibleWindow draws a window_ms whose µs the limit divides.
func divisibleWindow(rng *rand.Rand, limit int64) int64 {
	step := limit / gcd(limit, 1000)
	return step * logUniform(rng, 1, maxWindowMs/step)
}

// halfWindow draws a limit and a window with W/L exactly x.5 µs: W = (L/2)·odd, a
// multiple of 1000, so L is a multiple of 16 and the odd factor supplies the 5s.
func halfWindow(rng *rand.Rand) (limit, windowMs int64) {
	limit = 16 * (1 + rng.Int64N(62))
	fives := int64(125) / gcd(limit/2, 125)
	odd := fives * (2*logUniform(rng, 0, 1e6) + 1)
	w := limit / 2 * odd
	if w/1000 > maxWindowMs {
		return halfWindow(rng)
	}
	return limit, w / 1000
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// edgeSpecs are the fixed corners: limit 1 and 1000, windows of 1 ms and a year, ones
// the limit divides and ones it does not, W/L exactly x.5 µs; each option's edges. The
// default run takes a cross section; a longer one (-oracle.n above the default) takes
// every combination.
func edgeSpecs(f ospec) []ospec {
	full := *oracleN > oracleDefaultN
	kind := f.kind
	var out []ospec
	add := func(s ospec) {
		if s.valid() {
			out = append(out, s)
		}
	}
	either := func(all, some []int64) []int64 {
		if full {
			return all
		}
		return some
	}
	if kind == KindThrottle {
		for _, mb := range either([]int64{0, 1, 999}, []int64{0, 999}) {
			for _, n := range either([]int64{1, 7, 128, 640, 1000}, []int64{1, 7, 640}) {
				for _, p := range either([]int64{1, 3, 7, maxPeriodS}, []int64{1, 3, maxPeriodS}) {
					add(ospec{kind: kind, maxBurst: mb, count: n, periodS: p})
				}
			}
		}
		return out
	}
	pairs := [][2]int64{{16, 1}, {400, 7}, {16, 31_535_999}}
	if full {
		pairs = append(pairs, [][2]int64{{80, 1}, {400, 1}, {16, 3}, {992, 31}}...)
	}
	for _, l := range either([]int64{1, 2, 7, 16, 999, 1000}, []int64{1, 7, 1000}) {
		for _, w := range either([]int64{1, 7, 1000, 1001, 86_400_000, maxWindowMs}, []int64{1, 1001, maxWindowMs}) {
			pairs = append(pairs, [2]int64{l, w})
		}
	}
	for i, p := range pairs {
		add(ospec{kind: kind, limit: p[0], windowMs: p[1]})
		if !full && i%3 != 0 {
			continue
		}
		for _, v := range []int64{1, 1000} {
			switch kind {
			case KindToken:
				add(ospec{kind: kind, limit: p[0], windowMs: p[1], rate: v})
			case KindGCRA:
				add(ospec{kind: kind, limit: p[0], windowMs: p[1], burst: v})
			case KindLeaky:
				add(ospec{kind: kind, limit: p[0], windowMs: p[1], queue: v - 1})
			}
		}
	}
	return out
}

// TestOracleHalfWindows checks the x.5 µs generator, and that the oracle's integer T
// is round half up on rationals, over random and x.5 windows of every family.
func TestOracleHalfWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		l, w := halfWindow(rng)
		if 2*w*1000%l != 0 || (2*w*1000/l)%2 != 1 {
			t.Fatalf("halfWindow: %d µs / %d is not x.5", w*1000, l)
		}
		s := ospec{kind: KindGCRA, limit: l, windowMs: w}
		if got, want := s.emission(), (2*w*1000/l+1)/2; got != want {
			t.Fatalf("%v: T = %d, want %d (half up)", s, got, want)
		}
		for _, f := range oracleFamilies {
			s := drawSpec(rng, f)
			if s.emission() != s.emissionRat() {
				t.Fatalf("%v: T = %d, on rationals %d", s, s.emission(), s.emissionRat())
			}
		}
	}
}

// prodPasses reports whether production admits r on a copy of m at at, writing nothing.
func prodPasses(t testing.TB, m machine, r Request, at int64) bool {
	_, d := m.clone().decide(t, r, at)
	return d.Allowed
}

// burstCase is one frozen-clock burst on a fresh key: an optional COST n call, then
// cost-1 calls until one is refused, each preceded by a PEEK twin.
type burstCase struct {
	sp   ospec
	now  int64
	pre  int64 // COST of the first call; 0: none
	peek bool  // precede each call with its PEEK twin
}

// runBurst plays bc on production and oracle, checking every field of every reply (for
// RL.SLIDE and RL.TOKEN through fc, up to float rounding, though a fresh key's burst is
// exact in float), that a PEEK answers as the real call that follows it, that the burst admits exactly
// capacity - pre with remaining counting down by one to 0, and that waiting exactly
// the refusal's retry_after admits while one unit less does not. It returns the
// machine and oracle after the burst, and the refusal's reply.
func runBurst(t *testing.T, seed uint64, fc *floatCheck, bc burstCase) (machine, *oracle, [5]int64) {
	t.Helper()
	sp := bc.sp
	var m machine
	o := &oracle{sp: sp}
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d, %v at %d (COST %d first): %s", seed, sp, bc.now, bc.pre, fmt.Sprintf(format, a...))
	}
	reqs := map[[2]int64]Request{} // parsed once: (cost, peek)
	same := func(i int64, cost int64, peek bool) ([5]int64, bool) {
		key := [2]int64{cost, bool64(peek)}
		r, ok := reqs[key]
		if !ok {
			r = sp.request(t, cost, peek)
			reqs[key] = r
		}
		before := m.clone()
		d := m.do(t, r, bc.now)
		got := wire(sp.kind, d)
		if !integral(sp.kind) {
			fc.step(sp, before, m, o, cost, peek, bc.now, d)
		} else if want := o.call(cost, peek, bc.now); got != want.wire {
			fail("call %d (cost %d, peek %v): %v, the definition answers %v", i, cost, peek, got, want.wire)
		}
		return got, d.Allowed
	}
	capa := sp.capacity()
	if bc.pre > 0 {
		if _, ok := same(-1, bc.pre, false); !ok {
			fail("COST %d refused on a fresh key of capacity %d", bc.pre, capa)
		}
	}
	for i := int64(0); ; i++ {
		// The PEEK twin on the first calls and one in eight (it doubles a burst's cost).
		var peeked [5]int64
		twin := bc.peek && (i < 2 || i%8 == 0 || i >= capa-bc.pre-1)
		if twin {
			peeked, _ = same(i, 1, true)
		}
		got, ok := same(i, 1, false)
		if twin && peeked != got {
			fail("call %d: PEEK answered %v, the call after it %v", i, peeked, got)
		}
		left := capa - bc.pre - i - 1
		switch {
		case ok && left < 0:
			fail("call %d admitted past the capacity %d", i, capa)
		case ok && got[2] != left:
			fail("call %d: remaining %d, want %d", i, got[2], left)
		case !ok && left >= 0:
			fail("call %d refused, with capacity %d", i, capa)
		case !ok:
			if integral(sp.kind) { // fc.step has checked RL.SLIDE's and RL.TOKEN's
				checkWait(t, seed, m, o, sp, 1, bc.now, got[3])
			}
			return m, o, got
		}
	}
}

// checkWait checks a refusal's retry_after R (in units): R -1 must mean the cost
// exceeds what the definition can ever admit; otherwise production and oracle both
// admit the same call at now + R units and refuse it at now + (R-1) units.
func checkWait(t *testing.T, seed uint64, m machine, o *oracle, sp ospec, cost, now, retry int64) {
	t.Helper()
	if retry < 0 {
		if cost <= sp.capacity() && sp.kind != KindLeaky {
			t.Fatalf("seed %d, %v COST %d at %d: retry_after %d", seed, sp, cost, now, retry)
		}
		return
	}
	r := sp.request(t, cost, false)
	u := sp.unit()
	if !prodPasses(t, m, r, now+retry*u) || !o.passes(cost, now+retry*u) {
		t.Fatalf("seed %d, %v COST %d at %d: refused after waiting retry_after %d (production %v, definition %v)",
			seed, sp, cost, now, retry, prodPasses(t, m, r, now+retry*u), o.passes(cost, now+retry*u))
	}
	if retry > 0 && (prodPasses(t, m, r, now+(retry-1)*u) || o.passes(cost, now+(retry-1)*u)) {
		t.Fatalf("seed %d, %v COST %d at %d: retry_after %d, but one unit less already passes", seed, sp, cost, now, retry)
	}
}

// specsFor is the edge specs and n random ones for kind.
func specsFor(rng *rand.Rand, f ospec, n int) []ospec {
	specs := edgeSpecs(f)
	for range n {
		specs = append(specs, drawSpec(rng, f))
	}
	return specs
}

// drawNow is a frozen clock: a window start (base is a whole day) or anywhere in a day.
func drawNow(rng *rand.Rand) int64 {
	if rng.IntN(4) == 0 {
		return base
	}
	return base + rng.Int64N(ms(86_400_000))
}

// TestOracleBurst: at a frozen clock, a burst of cost-1 calls admits exactly the
// capacity (L; b for RL.GCRA; max_burst+1 for CL.THROTTLE; q+1 for RL.LEAKY), remaining
// counts down by one to 0, the next is refused, and waiting exactly its retry_after
// admits (one unit less does not); a COST n first leaves exactly capacity - n; a PEEK
// answers as the real call after it. Every reply field equals the definition's.
func TestOracleBurst(t *testing.T) {
	for _, f := range oracleFamilies {
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			fc := &floatCheck{t: t, seed: seed}
			cases := 0
			for _, sp := range specsFor(rng, f, *oracleN/250) {
				// CL.THROTTLE has no PEEK.
				bc := burstCase{sp: sp, now: drawNow(rng), peek: kind != KindThrottle && rng.IntN(2) == 0}
				runBurst(t, seed, fc, bc)
				bc.pre = 1 + rng.Int64N(sp.capacity())
				runBurst(t, seed, fc, bc)
				cases += 2
			}
			t.Logf("%d bursts", cases)
			if !integral(kind) {
				fc.report()
			}
		})
	}
}

// TestOracleIntervals: after a burst exhausts a key of a window the limit divides,
// exactly k intervals later exactly k more are admitted, for the rate algorithms
// (GCRA, CL.THROTTLE, LEAKY, TOKEN); RL.LOG admits nothing before a whole window and the
// limit at it; RL.FIXED nothing in the same window and the limit in the next; RL.SLIDE
// what the exact definition admits. Every reply is also the definition's.
func TestOracleIntervals(t *testing.T) {
	for _, f := range oracleFamilies {
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			fc := &floatCheck{t: t, seed: seed}
			cases := 0
			for _, sp := range specsFor(rng, f, *oracleN/250) {
				if sp.windowUs()%sp.limitOrCount() != 0 || (sp.kind == KindToken && sp.windowUs()%sp.tokenRate() != 0) {
					continue
				}
				now := drawNow(rng)
				I := sp.interval()
				m0, o0, _ := runBurst(t, seed, fc, burstCase{sp: sp, now: now})
				for _, k := range []int64{1, 1 + rng.Int64N(sp.capacity()), sp.capacity()} {
					m, o := m0.clone(), o0.clone()
					at := now + k*I
					got := admitAll(t, seed, fc, sp, &m, o, at)
					want := int64(-1) // the definition's count, where it is a closed form
					switch kind {
					case KindGCRA, KindThrottle, KindLeaky, KindToken:
						want = min(k, sp.capacity())
					case KindLog:
						want = sp.limit * bool64(k*I >= sp.windowUs())
					case KindFixed:
						want = sp.limit * bool64(at/sp.windowUs() != now/sp.windowUs())
					}
					if want >= 0 && got != want {
						t.Fatalf("seed %d, %v: %d admitted %d intervals (%d µs) after a burst at %d, want %d",
							seed, sp, got, k, k*I, now, want)
					}
					cases++
				}
			}
			t.Logf("%d cases", cases)
			if !integral(kind) {
				fc.report()
			}
		})
	}
}

// limitOrCount is the n of W/n: the limit, or CL.THROTTLE's count_per_period.
func (s ospec) limitOrCount() int64 {
	if s.kind == KindThrottle {
		return s.count
	}
	return s.limit
}

// admitAll makes cost-1 calls at one instant until one is refused, checking each reply
// against the oracle (RL.SLIDE and RL.TOKEN through fc), and returns how many were
// admitted.
func admitAll(t *testing.T, seed uint64, fc *floatCheck, sp ospec, m *machine, o *oracle, at int64) int64 {
	t.Helper()
	r := sp.request(t, 1, false)
	for n := int64(0); ; n++ {
		before := m.clone()
		d := m.do(t, r, at)
		if !integral(sp.kind) {
			fc.step(sp, before, *m, o, 1, false, at, d)
		} else if got, want := wire(sp.kind, d), o.call(1, false, at); got != want.wire {
			t.Fatalf("seed %d, %v at %d, call %d: %v, the definition answers %v", seed, sp, at, n, got, want.wire)
		}
		if !d.Allowed {
			return n
		}
		if n > sp.capacity() {
			t.Fatalf("seed %d, %v at %d: more than the capacity admitted", seed, sp, at)
		}
	}
}

// drawCost draws a cost the contract accepts: 0, 1, up to the capacity, or above it.
func drawCost(rng *rand.Rand, sp ospec) int64 {
	capa := sp.capacity()
	for {
		var c int64
		switch rng.IntN(8) {
		case 0:
			c = 0
		case 1, 2:
			c = 1
		case 3:
			c = capa + 1 + rng.Int64N(capa)
		default:
			c = 1 + rng.Int64N(capa)
		}
		if sp.parses(c) {
			return c
		}
	}
}

// drawGap draws the pause before the next call: none, 1 µs, exactly the last refusal's
// retry_after or 1 µs less, or up to two windows.
func drawGap(rng *rand.Rand, sp ospec, last [5]int64, limited bool) int64 {
	switch rng.IntN(8) {
	case 0, 1:
		return 0
	case 2:
		return 1
	case 3, 4:
		if limited && last[3] > 0 {
			return last[3]*sp.unit() - int64(rng.IntN(2))
		}
	}
	return logUniform(rng, 1, min(2*sp.windowUs(), 1<<45))
}

// integral reports whether kind's definition is integer arithmetic, so that production
// must match the oracle exactly.
func integral(kind Kind) bool { return kind != KindSlide && kind != KindToken }

// TestOracleSequences plays random sequences (random parameters, changed now and then on
// the same key, costs from 0 to above the capacity, PEEK, time steps from none to two
// windows and exactly retry_after) and
// checks every reply field against the definition: exactly for the integer algorithms;
// for RL.SLIDE and RL.TOKEN, within what float rounding explains (floatCheck). Every
// refusal's retry_after is waited out: exactly it admits, one unit less does not. A
// PEEK twin before a call answers as that call.
func TestOracleSequences(t *testing.T) {
	for _, f := range oracleFamilies {
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			fc := floatCheck{t: t, seed: seed}
			calls, keys := 0, 0
			for calls < *oracleN {
				sp := drawSpec(rng, f)
				var m machine
				o := &oracle{sp: sp}
				now := drawNow(rng)
				keys++
				for range 1 + rng.IntN(30) {
					if rng.IntN(16) == 0 {
						// Other parameters on the same key read its state under the new ones:
						// a tat more than τ ahead, say, which CL.THROTTLE refuses even
						// quantity 0.
						sp = drawSpec(rng, f)
						o.sp = sp
					}
					cost, peek := drawCost(rng, sp), kind != KindThrottle && rng.IntN(5) == 0
					r := sp.request(t, cost, peek)
					if rng.IntN(4) == 0 {
						twin := r
						twin.Peek = true
						_, dp := m.decide(t, twin, now)
						_, dr := m.decide(t, r, now)
						if wire(kind, dp) != wire(kind, dr) {
							t.Fatalf("seed %d, %v COST %d at %d: PEEK answers %v, the call %v", seed, sp, cost, now, wire(kind, dp), wire(kind, dr))
						}
					}
					before := m.clone()
					d := m.do(t, r, now)
					got := wire(kind, d)
					calls++
					if integral(kind) {
						if want := o.call(cost, peek, now); got != want.wire {
							t.Fatalf("seed %d, %v COST %d PEEK %v at %d (key's call %d): %v, the definition answers %v",
								seed, sp, cost, peek, now, calls, got, want.wire)
						}
						if !d.Allowed {
							checkWait(t, seed, before, o, sp, cost, now, got[3])
						}
					} else {
						fc.step(sp, before, m, o, cost, peek, now, d)
					}
					now += drawGap(rng, sp, got, !d.Allowed)
				}
			}
			t.Logf("%d calls on %d keys", calls, keys)
			if !integral(kind) {
				fc.report()
			}
		})
	}
}

// floatCheck compares RL.SLIDE and RL.TOKEN, whose contract mandates float64, with
// their exact definition, call by call, on the state production actually stored (so
// each call's rounding is judged alone; TestOracleSteady judges whole histories).
//
// What holds, and is asserted: a decision differs from the exact one only where the
// exact test misses by less than slack (a few ulps: each formula has three or four
// rounded operations on values below 3L + c); remaining and reset_after differ by at
// most 1, and RL.SLIDE's reset_after, integer in both, never; a retry_after always
// admits in production and one unit less never does, and the exact test at those two
// moments is within slack of production's verdict; a written state is the exact one
// (RL.SLIDE) or within slack of it (RL.TOKEN).
type floatCheck struct {
	t    *testing.T
	seed uint64

	steps, over, under, remaining, retry, reset int
	maxMiss                                     float64 // largest exact miss of a float decision, in units of L + c
	maxEarly                                    int64   // most µs an over-admission came before the exact definition admits
	retryEarly, retryLate                       int     // retry_after below, above the exact one
}

// slack is how far float rounding can move a test of est + c <= L or tokens >= c: four
// ulps of 3L + c, generous for three or four correctly rounded operations.
func slack(sp ospec, c int64) *big.Rat {
	return new(big.Rat).SetFrac(big.NewInt(3*sp.limit+c), new(big.Int).Lsh(big.NewInt(1), 50))
}

// margin is the exact test's margin: L - (est + c) for RL.SLIDE, tokens - c for
// RL.TOKEN; the call passes iff it is >= 0.
func (o *oracle) margin(c, now int64) *big.Rat {
	if o.sp.kind == KindSlide {
		return o.slideMargin(c, now)
	}
	return new(big.Rat).Sub(o.tokensAt(now), rat(c))
}

// adopt sets the oracle's state to the state production stored, the float tokens taken
// as the exact numbers they are.
func (o *oracle) adopt(m machine) {
	switch o.sp.kind {
	case KindSlide:
		o.used, o.win, o.cur, o.prev = true, m.slide.Window, m.slide.Cur, m.slide.Prev
	case KindToken:
		o.used, o.ts = m.token.TS != 0, m.token.TS
		o.tokens = new(big.Rat).SetFloat64(m.token.Tokens)
	}
}

// near reports whether the exact margin is within slack of 0.
func near(x, slack *big.Rat) bool { return new(big.Rat).Abs(x).Cmp(slack) <= 0 }

func (f *floatCheck) step(sp ospec, before, after machine, o *oracle, c int64, peek bool, now int64, d Decision) {
	t := f.t
	t.Helper()
	o.adopt(before)
	want := o.decide(c, now)
	got := wire(sp.kind, d)
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d, %v COST %d PEEK %v at %d, state %+v: %v, exact %v: %s",
			seed(f), sp, c, peek, now, before, got, want.wire, fmt.Sprintf(format, a...))
	}
	f.steps++
	sl := slack(sp, c)
	if c > 0 {
		mg := o.margin(c, now)
		if d.Allowed != want.allowed {
			if d.Allowed {
				f.over++
				f.maxEarly = max(f.maxEarly, firstUnit(now, 1, func(t int64) bool { return o.margin(c, t).Sign() >= 0 }))
			} else {
				f.under++
			}
			if !near(mg, sl) {
				fail("decision differs, exact margin %s beyond float rounding", mg.FloatString(20))
			}
			miss, _ := new(big.Rat).Quo(new(big.Rat).Abs(mg), rat(sp.limit+c)).Float64()
			f.maxMiss = max(f.maxMiss, miss)
		}
	}
	if got[1] != want.wire[1] || got[0] != want.wire[0] && d.Allowed == want.allowed {
		fail("fields 1-2")
	}
	if diff := got[2] - want.wire[2]; diff != 0 {
		f.remaining++
		if d.Allowed == want.allowed && (diff > 1 || diff < -1) {
			fail("remaining off by %d", diff)
		}
	}
	if got[4] != want.wire[4] {
		f.reset++
		if d.Allowed == want.allowed && (sp.kind == KindSlide || got[4]-want.wire[4] > 1 || want.wire[4]-got[4] > 1) {
			fail("reset_after")
		}
	}
	if !d.Allowed && got[3] >= 0 {
		if !want.allowed && got[3] != want.wire[3] {
			f.retry++
			if got[3] < want.wire[3] {
				f.retryEarly++
			} else {
				f.retryLate++
			}
		}
		// Production's own verdicts bind: exactly retry_after admits, a unit less does not.
		r := sp.request(t, c, false)
		at, early := now+got[3]*1000, now+(got[3]-1)*1000
		if !prodPasses(t, before, r, at) || got[3] > 0 && prodPasses(t, before, r, early) {
			fail("production refuses after retry_after, or admits one ms before it")
		}
		// The exact test agrees at both moments, up to rounding.
		if mg := o.margin(c, at); mg.Sign() < 0 && !near(mg, sl) {
			fail("exact test refuses after retry_after by %s", mg.FloatString(20))
		}
		if mg := o.margin(c, early); got[3] > 0 && mg.Sign() >= 0 && !near(mg, sl) {
			fail("exact test admits a ms before retry_after by %s", mg.FloatString(20))
		}
	}
	if got[3] == -1 && c <= sp.limit {
		fail("retry_after -1 for a cost within the capacity")
	}
	if d.Write && want.allowed {
		want.commit()
		switch sp.kind {
		case KindSlide:
			if o.win != after.slide.Window || o.cur != after.slide.Cur || o.prev != after.slide.Prev {
				fail("wrote %+v, the definition %d/%d/%d", after.slide, o.win, o.cur, o.prev)
			}
		case KindToken:
			if dev := new(big.Rat).Sub(new(big.Rat).SetFloat64(after.token.Tokens), o.tokens); !near(dev, sl) || after.token.TS != now {
				fail("wrote %+v, the definition %s tokens", after.token, o.tokens.FloatString(20))
			}
		}
	}
}

func seed(f *floatCheck) uint64 { return f.seed }

// report logs how often the float answer differed from the exact one.
func (f *floatCheck) report() {
	f.t.Logf("float vs exact over %d calls: decision %d (over-admitted %d, at most %d µs early; under %d; largest miss %.3g of L+c), remaining %d, retry_after %d (%d shorter, %d longer), reset_after %d",
		f.steps, f.over+f.under, f.over, f.maxEarly, f.under, f.maxMiss, f.remaining, f.retry, f.retryEarly, f.retryLate, f.reset)
}

// TestOracleSteady: after a burst at t0, one call every step µs for 10,000 intervals
// (W/L, rounded down; T for the GCRA family and RL.LEAKY; W/rate for RL.TOKEN), with
// step the interval and two thirds of it. The count production admits must be the
// exact definition's (an oracle run on the same schedule): equal for the integer
// algorithms, every reply equal too; within one for RL.SLIDE and RL.TOKEN, at every
// moment of the run. Where the definition's count has a closed form it is checked
// too: b + floor((t_last - t0)/T) for the GCRA family and RL.LEAKY (b = q+1) with their
// integer T, L + floor((t_last - t0)·rate/W) for RL.TOKEN.
func TestOracleSteady(t *testing.T) {
	for _, f := range oracleFamilies {
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			full := *oracleN > oracleDefaultN
			var specs []ospec
			for _, sp := range edgeSpecs(f) {
				if steadyOK(sp) && rng.IntN(4) == 0 {
					specs = append(specs, sp)
					break
				}
			}
			for len(specs) < max(1, *oracleN/100_000) {
				if sp := drawSpec(rng, f); steadyOK(sp) {
					specs = append(specs, sp)
				}
			}
			calls, ahead, behind := 0, int64(0), int64(0)
			for _, sp := range specs {
				I := sp.interval()
				steps := []int64{I, max(1, 2*I/3), max(1, I/2+1)}
				if !full {
					steps = steps[1+rng.IntN(2):][:1] // overdriven: two thirds or half of I
				}
				for _, step := range steps {
					n := 10_000 * I / step
					got, want, up, down := steady(t, seed, sp, step, n)
					calls += int(n)
					ahead, behind = max(ahead, up), max(behind, down)
					if integral(kind) && up+down != 0 || up > 1 || down > 1 {
						t.Fatalf("seed %d, %v, a call every %d µs: %d admitted, the exact definition %d (at worst %d ahead, %d behind)",
							seed, sp, step, got, want, up, down)
					}
					if closed, ok := steadyClosed(sp, step, n*step); ok && closed != want {
						t.Fatalf("seed %d, %v, a call every %d µs: the oracle admits %d, the closed form %d", seed, sp, step, want, closed)
					}
				}
			}
			t.Logf("%d specs, %d calls; production's count at worst %d ahead of the exact one, %d behind", len(specs), calls, ahead, behind)
		})
	}
}

// steadyOK keeps the steady runs within 2^49 µs of base, and the default run quick:
// RL.LOG's calls cost O(limit) each, so its limit stays at 100 there.
func steadyOK(sp ospec) bool {
	quick := sp.kind != KindLog || sp.limit <= 100 || *oracleN > oracleDefaultN
	return 10_000*sp.interval() < 1<<49 && quick
}

// steady plays the schedule on production and oracle and returns the counts they
// admitted and how far production's ran ahead of and behind the oracle's at worst; for
// the integer algorithms it also checks every reply.
func steady(t *testing.T, seed uint64, sp ospec, step, n int64) (got, want, ahead, behind int64) {
	t.Helper()
	var m machine
	o := &oracle{sp: sp}
	r := sp.request(t, 1, false)
	t0 := base + 12_345
	at := t0
	for i := int64(0); i <= n; i++ {
		if i > 0 {
			at += step
		}
		for {
			d := m.do(t, r, at)
			w := o.call(1, false, at)
			got += bool64(d.Allowed)
			want += bool64(w.allowed)
			ahead, behind = max(ahead, got-want), max(behind, want-got)
			if integral(sp.kind) && wire(sp.kind, d) != w.wire {
				t.Fatalf("seed %d, %v, a call every %d µs, at t0+%d: %v, the definition answers %v", seed, sp, step, at-t0, wire(sp.kind, d), w.wire)
			}
			if i > 0 || !d.Allowed && !w.allowed { // at t0, the burst: until both refuse
				break
			}
		}
	}
	return got, want, ahead, behind
}

// steadyClosed is the definition's count in closed form, where it has one: with calls
// at least as often as admissions come back, every admission after the burst comes at
// the first call once its interval has passed. The GCRA family and RL.LEAKY then keep
// tat exactly k intervals ahead, unless the capacity is 1 and the step does not divide
// T (a call late by the grid restarts the schedule from now); RL.TOKEN never caps its
// refill when the capacity is 2 or more and a step refills at most one token.
func steadyClosed(sp ospec, step, span int64) (int64, bool) {
	switch sp.kind {
	case KindGCRA, KindThrottle, KindLeaky:
		T := sp.emission()
		if sp.capacity() >= 2 || T%step == 0 {
			return sp.capacity() + span/T, true
		}
	case KindToken:
		if sp.limit >= 2 && step*sp.tokenRate() <= sp.windowUs() {
			return sp.limit + ratFloor(big.NewRat(span*sp.tokenRate(), sp.windowUs())), true
		}
	}
	return 0, false
}

// TestOracleRegressions holds the concrete cases, which the float GCRA failed.
func TestOracleRegressions(t *testing.T) {
	t.Run("RL.GCRA k 6 1000", func(t *testing.T) {
		// T = round(1e6/6) = 166,667 µs, τ = 6T = 1,000,002 µs: six pass, remaining 5..0.
		var steps []step
		for i := int64(1); i <= 6; i++ {
			steps = append(steps, step{0, "6 1000", [5]int64{1, 6, 6 - i, 0, (166_667*i + 999) / 1000}})
		}
		steps = append(steps, step{0, "6 1000", [5]int64{0, 6, 0, 167, 1001}})
		runSteps(t, KindGCRA, steps)
	})
	t.Run("CL.THROTTLE k 1 7 1", func(t *testing.T) {
		// T = round(1e6/7) = 142,857 µs, b = 2: two pass, the third waits T, 1 s rounded up.
		runSteps(t, KindThrottle, []step{
			{0, "1 7 1", [5]int64{0, 2, 1, -1, 1}},
			{0, "1 7 1", [5]int64{0, 2, 0, -1, 1}},
			{0, "1 7 1", [5]int64{1, 2, 0, 1, 1}},
			{142_857, "1 7 1", [5]int64{0, 2, 0, -1, 1}},
		})
	})
	t.Run("sweep", func(t *testing.T) {
		// Every algorithm, limit 1..150 × windows 7 ms..a day: a burst admits exactly the
		// limit (RL.LEAKY with QUEUE limit-1; CL.THROTTLE and GCRA with max_burst limit-1,
		// count limit per the window in whole seconds). The float GCRA failed 285 of 750.
		windows := []int64{7, 333, 1000, 60_000, 86_400_000}
		for _, f := range oracleFamilies {
			bad, n := 0, 0
			for l := int64(1); l <= 150; l++ {
				for _, w := range windows {
					sp := ospec{kind: f.kind, limit: l, windowMs: w}
					switch f.kind {
					case KindLeaky:
						sp.queue = l - 1
					case KindThrottle:
						sp = ospec{kind: f.kind, maxBurst: l - 1, count: l, periodS: max(1, w/1000)}
					}
					n++
					if got := burstSize(t, sp, base+ms(w)/3); got != l {
						bad++
						if bad <= 5 {
							t.Errorf("%v: a burst admits %d, want %d", sp, got, l)
						}
					}
				}
			}
			if bad > 0 || n != 750 {
				t.Errorf("%s: %d of %d bursts not exactly the limit", f.name(), bad, n)
			}
		}
	})
}

// burstSize is how many cost-1 calls production admits at one instant on a fresh key.
func burstSize(t *testing.T, sp ospec, now int64) int64 {
	var m machine
	r := sp.request(t, 1, false)
	n := int64(0)
	for n <= sp.capacity() && m.do(t, r, now).Allowed {
		n++
	}
	return n
}

// TestOracleFloatBoundaries puts RL.SLIDE and RL.TOKEN on the µs where their exact test
// flips and one µs either side, where float rounding decides if anything does, and
// judges each call as TestOracleSequences does (floatCheck). The states are set
// directly: RL.SLIDE's counts with est + c landing on L, RL.TOKEN's tokens a float
// left by some earlier cost (k/1000, rarely exact in binary) refilling to exactly c.
func TestOracleFloatBoundaries(t *testing.T) {
	t.Run("rl.slide", func(t *testing.T) {
		rng, seed := oracleRand(t)
		fc := floatCheck{t: t, seed: seed}
		for fc.steps < *oracleN {
			sp := drawSpec(rng, ospec{kind: KindSlide})
			L, W := sp.limit, sp.windowUs()
			prev, cur := 1+rng.Int64N(L), rng.Int64N(L)
			c := 1 + rng.Int64N(L-cur)
			k := L - cur - c // the call passes iff prev·(W - e)/W <= k
			if k >= prev {
				continue
			}
			w := base/W + 1
			for δ := int64(-1); δ <= 1; δ++ {
				e := W - k*W/prev + δ
				if e < 0 || e >= W {
					continue
				}
				m := machine{slide: SlideState{Window: w, Cur: cur, Prev: prev}}
				before := m.clone()
				d := m.do(t, sp.request(t, c, false), w*W+e)
				fc.step(sp, before, m, &oracle{sp: sp}, c, false, w*W+e, d)
			}
		}
		fc.report()
	})
	t.Run("rl.token", func(t *testing.T) {
		rng, seed := oracleRand(t)
		fc := floatCheck{t: t, seed: seed}
		for fc.steps < *oracleN {
			sp := drawSpec(rng, ospec{kind: KindToken})
			L, W, r := sp.limit, sp.windowUs(), sp.tokenRate()
			c := 1 + rng.Int64N(L)
			tokens := float64(rng.Int64N(c*1000)) / 1000
			ts := drawNow(rng)
			// tokens + elapsed·r/W = c at elapsed = (c - tokens)·W/r µs.
			x := new(big.Rat).Sub(rat(c), new(big.Rat).SetFloat64(tokens))
			at := ts + ratFloor(x.Mul(x, big.NewRat(W, r)))
			for δ := int64(-1); δ <= 1; δ++ {
				if at+δ <= ts {
					continue
				}
				m := machine{token: TokenState{Tokens: tokens, TS: ts}}
				before := m.clone()
				d := m.do(t, sp.request(t, c, false), at+δ)
				fc.step(sp, before, m, &oracle{sp: sp}, c, false, at+δ, d)
			}
		}
		fc.report()
	})
}
