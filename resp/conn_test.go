package resp

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestConnectionCommands(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			ts := startServer(t, Config{})
			run(t, ts.client(t, proto), []call{
				{"PING", "PONG"},
				{"ping hello", "hello"},
				{"PING a b", "ERR wrong number of arguments for 'ping' command"},
				{"ECHO hi", "hi"},
				{"ECHO", "ERR wrong number of arguments for 'echo' command"},
				{"SELECT 0", "OK"},
				{"SELECT 1", "ERR DB index is out of range"},
				{"SELECT x", "ERR value is not an integer or out of range"},
				{"AUTH secret", errNoPassword},
				{"AUTH default secret", "OK"},
				{"AUTH bob secret", errWrongPass},
				{"AUTH a b c", "ERR syntax error"},
				{"HELLO 4", "NOPROTO unsupported protocol version"},
				{"HELLO x", "ERR Protocol version is not an integer or out of range"},
				{"HELLO 3 FOO", "ERR Syntax error in HELLO option 'FOO'"},
				{"HELLO 3 AUTH default", "ERR Syntax error in HELLO option 'AUTH'"},
				{"HELLO 3 AUTH bob x", errWrongPass},
				{"CLIENT SETNAME worker-1", "OK"},
				{"CLIENT GETNAME", "worker-1"},
				{"CLIENT SETNAME", "ERR wrong number of arguments for 'client|setname' command"},
				{"CLIENT SETINFO LIB-NAME mylib", "OK"},
				{"CLIENT SETINFO lib-ver 1.2.3", "OK"},
				{"CLIENT SETINFO BAD x", "ERR Unrecognized option 'BAD'"},
				{"CLIENT LIST TYPE pubsub", ""},
				{"CLIENT LIST TYPE foo", "ERR Unknown client type 'foo'"},
				{"CLIENT LIST ID x", "ERR Invalid client ID"},
				{"CLIENT LIST FOO", "ERR syntax error"},
				{"CLIENT FOO", "ERR unknown subcommand 'FOO'. Try CLIENT HELP."},
				{"CLIENT", "ERR wrong number of arguments for 'client' command"},
				{"FOO a b", "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "},
				{"foo", "ERR unknown command 'foo', with args beginning with: "},
			})
		})
	}
}

// TestConnectionNoStateChangeOnError: a rejected HELLO or CLIENT SETNAME leaves the
// connection as it was.
func TestConnectionNoStateChangeOnError(t *testing.T) {
	ts := startServer(t, Config{})
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
	defer rdb.Close()
	ctx := context.Background()
	for _, bad := range [][]any{
		{"HELLO", "3", "SETNAME", "bad name"},
		{"HELLO", "3", "AUTH", "bob", "pw", "SETNAME", "ok"},
		{"CLIENT", "SETNAME", "new\nline"},
	} {
		if err := rdb.Do(ctx, bad...).Err(); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	info, err := rdb.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.Resp != 2 || info.Name != "" {
		t.Errorf("after rejected calls: resp=%d name=%q, want 2 and no name", info.Resp, info.Name)
	}
}

func TestHello(t *testing.T) {
	ts := startServer(t, Config{})
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
	defer rdb.Close()
	id := do(rdb, "CLIENT ID")
	run(t, rdb, []call{
		// In RESP2, the map is a flat array of pairs, as Redis sends it.
		{"HELLO", "[server redis version 7.0.0 proto 2 id " + id + " mode standalone role master modules []]"},
		{"HELLO 3 AUTH default pw SETNAME svc", "{id:" + id + " mode:standalone modules:[] proto:3 role:master server:redis version:7.0.0}"},
		{"CLIENT GETNAME", "svc"},
		// Now RESP3: CONFIG GET is a map, a missing name is the RESP3 null.
		{"CONFIG GET appendonly", "{appendonly:no}"},
		{"CLIENT SETNAME ", "OK"},
		{"CLIENT GETNAME", "(nil)"},
		{"HELLO 2", "[server redis version 7.0.0 proto 2 id " + id + " mode standalone role master modules []]"},
		{"CONFIG GET appendonly", "[appendonly no]"},
	})
}

// TestClientTyped drives CLIENT through go-redis's typed API and its parser of
// CLIENT INFO lines.
func TestClientTyped(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: proto, ClientName: "typed" + strconv.Itoa(proto), PoolSize: 1})
		defer rdb.Close()
		info, err := rdb.ClientInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		id, err := rdb.ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// go-redis sent HELLO (with SETNAME) and CLIENT SETINFO when it connected.
		if info.ID != id || info.Resp != proto || info.Name != "typed"+strconv.Itoa(proto) ||
			!strings.HasPrefix(info.LibName, "go-redis(") || info.LibVer != redis.Version() ||
			info.LastCmd != "client|info" || info.DB != 0 {
			t.Errorf("CLIENT INFO = %+v", info)
		}
		list, err := rdb.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(list, "id="+strconv.FormatInt(id, 10)+" ") || !strings.HasSuffix(list, "\n") {
			t.Errorf("CLIENT LIST lacks id=%d:\n%s", id, list)
		}
		only, err := rdb.Do(ctx, "CLIENT", "LIST", "ID", id).Text()
		if err != nil || strings.Count(only, "\n") != 1 || !strings.HasPrefix(only, "id="+strconv.FormatInt(id, 10)+" ") {
			t.Errorf("CLIENT LIST ID %d = %q, %v", id, only, err)
		}
		if name, err := rdb.ClientGetName(ctx).Result(); name != "typed"+strconv.Itoa(proto) || err != nil {
			t.Errorf("CLIENT GETNAME = %q, %v", name, err)
		}
		if s, err := rdb.Ping(ctx).Result(); s != "PONG" || err != nil {
			t.Errorf("PING = %q, %v", s, err)
		}
		if s, err := rdb.Echo(ctx, "a\r\nb").Result(); s != "a\r\nb" || err != nil {
			t.Errorf("ECHO = %q, %v", s, err)
		}
	}
}

func TestClientHelp(t *testing.T) {
	ts := startServer(t, Config{})
	got := do(ts.client(t, 3), "CLIENT HELP")
	for _, want := range []string{
		"[CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are: GETNAME",
		"SETINFO LIB-NAME libname|LIB-VER libver",
		"LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id [client-id ...]]",
		"HELP     Show helpful text about the different subcommands.]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CLIENT HELP lacks %q:\n%s", want, got)
		}
	}
}

func TestQuit(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	// Commands pipelined after QUIT are not run.
	r.send("*2\r\n$4\r\nECHO\r\n$1\r\na\r\n*1\r\n$4\r\nQUIT\r\n*4\r\n$8\r\nRL.TOKEN\r\n$1\r\nk\r\n$2\r\n10\r\n$4\r\n1000\r\n")
	r.expect("$1\r\na\r\n+OK\r\n")
	r.expectClosed()
	run(t, ts.client(t, 3), []call{{"EXISTS k", "0"}, {"PING", "PONG"}})
}
