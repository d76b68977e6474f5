package keyfamily

import (
	"strconv"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	for key, want := range map[string]string{
		"api:alice":                          "api",
		"api:alice:x":                        "api",
		"tenant-1.eu_w":                      "tenant-1.eu_w",
		":x":                                 Other,
		"":                                   Other,
		"a b:x":                              Other,
		"a\r\nb:x":                           Other,
		"é:x":                                Other,
		"a,b=c:x":                            Other,
		strings.Repeat("a", MaxLen):          strings.Repeat("a", MaxLen),
		strings.Repeat("a", MaxLen+1) + ":x": Other,
	} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %q, want %q", key, got, want)
		}
		if got := Of([]byte(key)); string(got) != want {
			t.Errorf("Of([]byte(%q)) = %q, want %q", key, got, want)
		}
	}
}

// TestTableBound: past MaxFamilies, new families share Other's T; Find adds nothing.
func TestTableBound(t *testing.T) {
	var tb Table[int]
	if tb.Find([]byte("a:1")) != nil {
		t.Fatal("Find on an empty table found a family")
	}
	for i := range MaxFamilies + 10 {
		*tb.Get([]byte("f" + strconv.Itoa(i) + ":k"))++
	}
	*tb.Get([]byte("f0:other key"))++
	*tb.Get([]byte(":no family"))++
	got := map[string]int{}
	var order []string
	tb.Each(func(f string, v *int) { got[f] = *v; order = append(order, f) })
	if len(got) != MaxFamilies+1 || got["f0"] != 2 || got["f1"] != 1 || got[Other] != 11 {
		t.Errorf("families: %d, f0 %d, f1 %d, other %d; want %d, 2, 1, 11", len(got), got["f0"], got["f1"], got[Other], MaxFamilies+1)
	}
	if order[0] != "f0" || order[1] != "f1" || order[2] != "f10" || order[len(order)-1] != Other {
		t.Errorf("order %v: want by name, then %s", order, Other)
	}
	if tb.Find([]byte("f1:x")) != tb.Get([]byte("f1:y")) || tb.Find([]byte("new:x")) != tb.Get([]byte(":x")) {
		t.Error("Find differs from Get on a held family, or on a new one past the bound")
	}
}
