package algo

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// refund is the definition of a refund of n at now on the oracle's key: the count of
// the current window down (FIXED; SLIDE, then the previous window's), the newest
// entries in the window dropped (LOG), tokens up to the capacity (TOKEN), the schedule
// back by n intervals and never before now (GCRA family, LEAKY). It returns the reply,
// a PEEK of cost 0 on what is left.
func (o *oracle) refund(n, now int64) [5]int64 {
	switch o.sp.kind {
	case KindFixed:
		if o.used && o.win == now/o.sp.windowUs() {
			o.cur = max(0, o.cur-n)
		}
	case KindSlide:
		w, _, cur, prev := o.slideView(now)
		take := min(cur, n)
		o.used, o.win, o.cur, o.prev = true, w, cur-take, max(0, prev-(n-take))
	case KindLog:
		live := o.liveLog(now)
		for len(live) > 0 && n > 0 {
			last := &live[len(live)-1]
			if last.cost <= n {
				n -= last.cost
				live = live[:len(live)-1]
			} else {
				last.cost -= n
				n = 0
			}
		}
		o.log = live
	case KindToken:
		capa := rat(o.sp.limit)
		tok := new(big.Rat).Add(o.tokensAt(now), rat(n))
		if tok.Cmp(capa) > 0 {
			tok = capa
		}
		o.used, o.tokens, o.ts = true, tok, now
	case KindGCRA, KindThrottle, KindLeaky:
		if o.tat > now {
			o.tat = max(now, o.tat-n*o.sp.emission())
		}
	}
	return o.decide(0, now).wire
}

// refundRequest is sp's request giving back n.
func refundRequest(t testing.TB, sp ospec, n int64) Request {
	r := sp.request(t, 1, false) // Redis's GCRA takes no TOKENS 0
	r.Cost, r.Refund = 0, n
	return r
}

// TestRefundOracle plays random sequences of calls and refunds and checks every refund's
// reply against the definition, and every call after it, so that the state a refund
// leaves is the definition's: exactly for the integer algorithms; for RL.SLIDE (integer
// state, float reply) the state; for RL.TOKEN the tokens within float rounding.
func TestRefundOracle(t *testing.T) {
	for _, f := range oracleFamilies {
		kind := f.kind
		t.Run(f.name(), func(t *testing.T) {
			t.Parallel()
			rng, seed := oracleRand(t)
			refunds := 0
			for calls := 0; calls < *oracleN; {
				sp := drawSpec(rng, f)
				var m machine
				o := &oracle{sp: sp}
				now := drawNow(rng)
				for range 1 + rng.IntN(30) {
					calls++
					if rng.IntN(3) == 0 {
						n := 1 + rng.Int64N(2*sp.capacity())
						before := m.clone()
						d := m.do(t, refundRequest(t, sp, n), now)
						want := o.refund(n, now)
						refunds++
						switch {
						case integral(kind):
							if got := wire(kind, d); got != want {
								t.Fatalf("seed %d, %v REFUND %d at %d: %v, the definition answers %v (state before %+v)",
									seed, sp, n, now, got, want, before)
							}
						case kind == KindSlide:
							v := viewSlide(m.slide, sp.windowUs(), now)
							if v.cur != o.cur || v.prev != o.prev {
								t.Fatalf("seed %d, %v REFUND %d at %d: cur %d prev %d, the definition %d %d",
									seed, sp, n, now, v.cur, v.prev, o.cur, o.prev)
							}
						default:
							got := newBucket(sp.request(t, 1, false)).refill(m.token, now)
							diff := new(big.Rat).Sub(new(big.Rat).SetFloat64(got), o.tokensAt(now))
							if diff.Abs(diff).Cmp(slack(sp, n)) > 0 {
								t.Fatalf("seed %d, %v REFUND %d at %d: %v tokens, the definition %v",
									seed, sp, n, now, got, o.tokensAt(now).FloatString(6))
							}
							o.tokens, o.ts = new(big.Rat).SetFloat64(m.token.Tokens), m.token.TS // judge each step alone
							if m.token.TS == 0 {                                                 // a refund of a full bucket left it unwritten: still fresh
								o.used = false
							}
						}
					} else {
						cost := drawCost(rng, sp)
						d := m.do(t, sp.request(t, cost, false), now)
						want := o.call(cost, false, now)
						if integral(kind) && wire(kind, d) != want.wire {
							t.Fatalf("seed %d, %v COST %d at %d after refunds: %v, the definition answers %v",
								seed, sp, cost, now, wire(kind, d), want.wire)
						}
						if !integral(kind) { // float: follow production's state
							o.used, o.tokens, o.ts = true, new(big.Rat).SetFloat64(m.token.Tokens), m.token.TS
							o.win, o.cur, o.prev = m.slide.Window, m.slide.Cur, m.slide.Prev
							if kind == KindToken && m.token.TS == 0 {
								o.used = false
							}
						}
					}
					if rng.IntN(2) == 0 {
						now += drawGap(rng, sp, [5]int64{}, false)
					}
				}
			}
			t.Logf("%d refunds", refunds)
		})
	}
}

// TestRefundProperty checks, over random parameters and histories, for every algorithm:
// spending k and giving k back at the same moment leaves a key that answers every
// later call as if nothing had been spent; giving back j of k answers as spending k-j;
// giving back more than was ever spent answers as a fresh key (never more room); and a
// fresh key has nothing to give back (no write).
func TestRefundProperty(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(kind), 23))
			checked := 0
			for iter := 0; iter < 3000; iter++ {
				r := mustParse(t, kind, randomArgs(rng, kind))
				if horizon(r) >= 1<<52 {
					continue
				}
				refund := func(n int64) Request {
					q := r
					q.Cost, q.Refund = 0, n
					return q
				}
				now := base + rng.Int64N(ms(86_400_000))
				var fresh machine
				if d := fresh.do(t, refund(1+rng.Int64N(10)), now); d.Write {
					t.Fatalf("%+v: a refund on a fresh key writes", r)
				}
				var m machine
				for range rng.IntN(8) {
					h := r
					h.Cost = randomCost(rng, r)
					m.do(t, h, now)
					now += randomGap(rng, r)
				}
				k := randomCost(rng, r)
				spend := r
				spend.Cost = k
				spent := m.clone()
				if d := spent.do(t, spend, now); !d.Allowed {
					continue
				}
				checked++
				j := 1 + rng.Int64N(k)
				less := m.clone()
				lessSpend := spend
				lessSpend.Cost = k - j
				less.do(t, lessSpend, now)
				back, part, all := spent.clone(), spent.clone(), spent.clone()
				peek := refund(k)
				peek.Peek = true
				_, dp := spent.decide(t, peek, now) // fails on a state changed without Write
				if dr := back.do(t, refund(k), now); dp.Write || wire(kind, dp) != wire(kind, dr) {
					t.Fatalf("%+v: a PEEK refund answers %v (write %v), the refund %v", r, wire(kind, dp), dp.Write, wire(kind, dr))
				}
				part.do(t, refund(j), now)
				all.do(t, refund(1e12), now)

				// The same calls on each pair, from now on; TOKEN at now only, where its
				// floats are the same sums (tokens - k + k is exact for whole tokens).
				later := now
				for step := range 6 {
					c := r
					c.Cost, c.Peek = randomCost(rng, r), rng.IntN(3) == 0
					if step == 0 {
						c.Peek = true
					}
					for _, p := range []struct {
						name string
						a, b *machine
					}{{"refund k", &back, &m}, {"refund j", &part, &less}, {"refund all", &all, &fresh}} {
						if kind == KindToken && (later != now || p.name == "refund j" || m.token.Tokens != float64(int64(m.token.Tokens))) {
							continue
						}
						da, db := p.a.do(t, c, later), p.b.do(t, c, later)
						if wire(kind, da) != wire(kind, db) {
							t.Fatalf("%+v, k %d j %d at %d: after %s, %+v answers %v, want %v",
								r, k, j, now, p.name, c, wire(kind, da), wire(kind, db))
						}
					}
					later += randomGap(rng, r)
				}
			}
			if checked < 500 {
				t.Fatalf("only %d histories checked", checked)
			}
		})
	}
}

// TestRefundLog checks the log's refund in place: the newest entries go first, an
// entry partly given back keeps the rest, and entries out of the window are dropped.
func TestRefundLog(t *testing.T) {
	r := Request{Kind: KindLog, Limit: 10, Window: ms(1000)}
	entries := []LogEntry{{base - ms(2000), 4}, {base, 2}, {base + 10, 3}}
	got, d := Log(entries, Request{Kind: KindLog, Limit: 10, Window: ms(1000), Refund: 4}, base+20)
	want := []LogEntry{{base, 1}}
	if !sameEntries(got, want) || !d.Write || d.Remaining != 9 || Millis(d.ResetAfter) != 1000 {
		t.Fatalf("Log refund 4 = %v %+v, want %v, remaining 9, reset 1000", got, d, want)
	}
	r.Refund = 5
	if got, d = Log(got, r, base+20); len(got) != 0 || !d.Write || d.FreshAt != base+20 {
		t.Fatalf("Log refund 5 of 1 = %v %+v, want empty and fresh", got, d)
	}
}

// TestRefundTatOverflow checks that a huge refund on a long schedule does not
// overflow: n·T would pass int64, and the schedule goes back to now.
func TestRefundTatOverflow(t *testing.T) {
	r := Request{Kind: KindGCRA, Limit: 1, Window: ms(maxWindowMs), Refund: 1 << 40}
	now := base
	tat, d := GCRA(now+ms(maxWindowMs), r, now)
	if tat != now || !d.Write || d.Remaining != 1 || Millis(d.ResetAfter) != 0 {
		t.Fatalf("GCRA refund = %d %+v, want now, remaining 1, reset 0", tat, d)
	}
}
