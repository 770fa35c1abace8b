package health

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Bounds on one run of a Lua health script. Argo CD runs its scripts with the whole standard
// library when asked (useOpenLibs) and no bound but a timeout; Freshet never opens os, io or
// the loaders, and bounds instructions, time, string sizes and allocations.
const (
	// LuaMaxInstructions bounds the VM instructions of one run.
	LuaMaxInstructions = 1_000_000
	// LuaTimeout bounds the wall time of one run.
	LuaTimeout = time.Second
	// LuaMaxString bounds any string a script builds.
	LuaMaxString = 1 << 20
	// LuaMaxAlloc bounds the bytes allocated while a script runs (measured on the process,
	// so the bound is approximate and generous).
	LuaMaxAlloc = 256 << 20
	// luaMaxGsubInput bounds the subject of string.gsub (gopher-lua copies it per match).
	luaMaxGsubInput = 16 << 10
	// luaMaxPatternCost bounds (len(subject)+1)^(quantifiers+1) of a pattern match, the
	// backtracking matcher's worst case, which runs in Go and cannot be interrupted.
	luaMaxPatternCost = 1e9
	// luaAllocCheckEvery is how many instructions pass between two allocation checks.
	luaAllocCheckEvery = 1024
)

// ErrLuaBound is wrapped by the errors of a script stopped by a bound.
var ErrLuaBound = errors.New("lua bound exceeded")

var errLuaTimeout = errors.New("timeout")

// luaTimeoutError is a run stopped by the time bound (which depends on the machine's load).
type luaTimeoutError struct{ err error }

func (e luaTimeoutError) Error() string        { return e.err.Error() }
func (e luaTimeoutError) Unwrap() error        { return e.err }
func (e luaTimeoutError) Is(target error) bool { return target == errLuaTimeout }

// LuaScript is a compiled health.lua script. It is safe for concurrent use: every run has its
// own interpreter state.
type LuaScript struct {
	name  string // where it came from, for messages
	proto *lua.FunctionProto

	// results remembers the result per object version (uid and resourceVersion), as Argo CD
	// assesses an object when it changes, not at every look: a run costs ~0.25 ms.
	mu      sync.Mutex
	results map[string]Result
}

// luaResultCache bounds LuaScript.results (emptied when full).
const luaResultCache = 4096

// CompileLua compiles a health script; name says where it came from (an argocd-cm key).
func CompileLua(name, src string) (*LuaScript, error) {
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, errors.New(oneLine(err.Error())) // names the script, line and column
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, oneLine(err.Error()))
	}
	return &LuaScript{name: name, proto: proto}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Assess runs the script with obj as the global `obj` and reads the table it returns (`hs`,
// with status and message), as Argo CD does. A script that fails, returns something else, or
// runs past a bound is Unknown with a message saying why.
func (s *LuaScript) Assess(obj *unstructured.Unstructured) Result {
	key := ""
	if uid, rv := obj.GetUID(), obj.GetResourceVersion(); uid != "" && rv != "" {
		key = string(uid) + "/" + rv
		s.mu.Lock()
		r, ok := s.results[key]
		s.mu.Unlock()
		if ok {
			return r
		}
	}
	res, err := s.run(obj.Object)
	if err != nil {
		res = Result{Status: Unknown, Message: err.Error()}
	}
	if key != "" && !errors.Is(err, errLuaTimeout) { // the time bound depends on the load: try again next time

		s.mu.Lock()
		if s.results == nil || len(s.results) >= luaResultCache {
			s.results = map[string]Result{}
		}
		s.results[key] = res
		s.mu.Unlock()
	}
	return res
}

func (s *LuaScript) run(obj map[string]any) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), LuaTimeout)
	defer cancel()
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 200, RegistrySize: 256, RegistryMaxSize: 1 << 16, RegistryGrowStep: 256})
	defer L.Close()
	bc := &boundedCtx{Context: ctx, L: L, start: heapAllocs()}
	L.SetContext(bc)
	if err := openSandbox(L); err != nil {
		return Result{}, fmt.Errorf("%s: %v", s.name, err)
	}
	L.SetGlobal("obj", toLua(L, obj, 0))
	L.Push(L.NewFunctionFromProto(s.proto))
	err := L.PCall(0, 1, nil)
	if reason := bc.stopped(); reason != "" {
		if bc.reason.Load() == nil {
			return Result{}, luaTimeoutError{fmt.Errorf("%s stopped: %s: %w", s.name, reason, ErrLuaBound)}
		}
		return Result{}, fmt.Errorf("%s stopped: %s: %w", s.name, reason, ErrLuaBound)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %s", s.name, luaErrorMessage(err))
	}
	ret := L.Get(-1)
	tbl, ok := ret.(*lua.LTable)
	if !ok {
		return Result{}, fmt.Errorf("%s returned %s, want a table with status and message (return hs)", s.name, ret.Type())
	}
	st := tbl.RawGetString("status")
	status := Status(lua.LVAsString(st))
	if _, ok := order[status]; !ok || st.Type() != lua.LTString {
		return Result{}, fmt.Errorf("%s returned status %q, want one of Healthy, Progressing, Degraded, Suspended, Missing, Unknown", s.name, lua.LVAsString(st))
	}
	msg := tbl.RawGetString("message")
	m := ""
	if msg.Type() == lua.LTString || msg.Type() == lua.LTNumber {
		m = lua.LVAsString(msg)
	}
	if len(m) > 4096 {
		m = m[:4096] + "…"
	}
	return Result{Status: status, Message: m}, nil
}

func luaErrorMessage(err error) string {
	var le *lua.ApiError
	if errors.As(err, &le) {
		return oneLine(le.Object.String())
	}
	return oneLine(err.Error())
}

// boundedCtx is the interpreter's context: gopher-lua asks for Done before every instruction,
// which is where instructions are counted, strings in the frame's registers measured and,
// every luaAllocCheckEvery instructions, the allocations looked at.
type boundedCtx struct {
	context.Context
	L      *lua.LState
	n      int64
	start  uint64
	reason atomic.Pointer[string]
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *boundedCtx) stop(why string) <-chan struct{} {
	c.reason.CompareAndSwap(nil, &why)
	return closedCh
}

func (c *boundedCtx) stopped() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	if c.Context.Err() != nil {
		return fmt.Sprintf("ran longer than %s", LuaTimeout)
	}
	return ""
}

func (c *boundedCtx) Err() error {
	if c.reason.Load() != nil {
		return ErrLuaBound
	}
	return c.Context.Err()
}

func (c *boundedCtx) Done() <-chan struct{} {
	if c.reason.Load() != nil {
		return closedCh
	}
	c.n++
	if c.n > LuaMaxInstructions {
		return c.stop(fmt.Sprintf("more than %d instructions (a loop that does not end?)", LuaMaxInstructions))
	}
	for i, top := 1, c.L.GetTop(); i <= top; i++ {
		if s, ok := c.L.Get(i).(lua.LString); ok && len(s) > LuaMaxString {
			return c.stop(fmt.Sprintf("built a string of %d bytes (at most %d)", len(s), LuaMaxString))
		}
	}
	if c.n%luaAllocCheckEvery == 0 {
		if a := heapAllocs() - c.start; a > LuaMaxAlloc {
			return c.stop(fmt.Sprintf("allocated more than %d MiB", LuaMaxAlloc>>20))
		}
	}
	return c.Context.Done()
}

func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// openSandbox opens what Argo CD's scripts use without useOpenLibs: the base library without
// loaders, printing or the garbage collector; table; string, with its size-amplifying and
// backtracking functions bounded; math; and os reduced to clock, date, difftime and time.
func openSandbox(L *lua.LState) error {
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.OsLibName, lua.OpenOs}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		if err := L.PCall(1, 0, nil); err != nil {
			return err
		}
	}
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "require", "module", "print",
		"collectgarbage", "getfenv", "setfenv", "newproxy", "_printregs"} {
		L.SetGlobal(name, lua.LNil)
	}
	osLib, _ := L.GetGlobal("os").(*lua.LTable)
	safeOS := L.NewTable()
	if osLib != nil {
		for _, n := range []string{"clock", "date", "difftime", "time"} {
			safeOS.RawSetString(n, osLib.RawGetString(n))
		}
	}
	L.SetGlobal("os", safeOS)
	if loaded, ok := L.GetField(L.Get(lua.RegistryIndex), "_LOADED").(*lua.LTable); ok {
		loaded.RawSetString("os", safeOS)
	}
	str, ok := L.GetGlobal("string").(*lua.LTable)
	if !ok {
		return errors.New("string library missing")
	}
	wrap := func(name string, check func(L *lua.LState)) {
		orig, ok := str.RawGetString(name).(*lua.LFunction)
		if !ok {
			return
		}
		str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			check(L)
			top := L.GetTop()
			L.Push(orig)
			for i := 1; i <= top; i++ {
				L.Push(L.Get(i))
			}
			L.Call(top, lua.MultRet)
			return L.GetTop() - top
		}))
	}
	wrap("rep", func(L *lua.LState) {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if n > 0 && float64(len(s))*float64(n) > LuaMaxString {
			L.RaiseError("string.rep: result of %d×%d bytes is larger than %d", len(s), n, LuaMaxString)
		}
	})
	wrap("format", func(L *lua.LState) {
		f := L.CheckString(1)
		total := len(f)
		for i := 2; i <= L.GetTop(); i++ {
			if s, ok := L.Get(i).(lua.LString); ok {
				total += len(s)
			} else {
				total += 32
			}
			if total > LuaMaxString {
				L.RaiseError("string.format: result may be larger than %d bytes", LuaMaxString)
			}
		}
		for i := 0; i < len(f); i++ {
			if f[i] != '%' {
				continue
			}
			digits := 0
			for i++; i < len(f) && strings.IndexByte("-+ #0123456789.", f[i]) >= 0; i++ {
				if f[i] >= '0' && f[i] <= '9' {
					digits++
					if digits > 2 {
						L.RaiseError("string.format: width or precision longer than 2 digits in %q", f)
					}
				} else {
					digits = 0
				}
			}
		}
	})
	for _, name := range []string{"find", "match", "gmatch"} {
		wrap(name, func(L *lua.LState) {
			if name == "find" && L.GetTop() >= 4 && lua.LVAsBool(L.Get(4)) {
				return // plain find
			}
			checkPattern(L, name, L.CheckString(1), L.CheckString(2))
		})
	}
	gsub, _ := str.RawGetString("gsub").(*lua.LFunction)
	str.RawSetString("gsub", L.NewFunction(func(L *lua.LState) int {
		s, pat := L.CheckString(1), L.CheckString(2)
		limit := L.Get(4)
		if len(s) > luaMaxGsubInput {
			L.RaiseError("string.gsub: subject of %d bytes is larger than %d", len(s), luaMaxGsubInput)
		}
		checkPattern(L, "gsub", s, pat)
		repl := L.Get(3)
		switch r := repl.(type) {
		case lua.LString:
			if float64(len(s)+1)*float64(len(r)+1)+float64(len(s)) > LuaMaxString {
				L.RaiseError("string.gsub: result may be larger than %d bytes", LuaMaxString)
			}
		case *lua.LTable, *lua.LFunction:
			// Count what the replacements produce.
			total := len(s)
			repl = L.NewFunction(func(L *lua.LState) int {
				var v lua.LValue
				if t, ok := r.(*lua.LTable); ok {
					v = L.GetTable(t, L.Get(1))
				} else {
					top := L.GetTop()
					L.Push(r)
					for i := 1; i <= top; i++ {
						L.Push(L.Get(i))
					}
					L.Call(top, 1)
					v = L.Get(-1)
				}
				if s, ok := v.(lua.LString); ok {
					total += len(s)
					if total > LuaMaxString {
						L.RaiseError("string.gsub: result larger than %d bytes", LuaMaxString)
					}
				}
				L.Push(v)
				return 1
			})
		}
		L.Push(gsub)
		L.Push(lua.LString(s))
		L.Push(lua.LString(pat))
		L.Push(repl)
		L.Push(limit)
		L.Call(4, 2)
		return 2
	}))
	if tbl, ok := L.GetGlobal("table").(*lua.LTable); ok {
		if concat, ok := tbl.RawGetString("concat").(*lua.LFunction); ok {
			tbl.RawSetString("concat", L.NewFunction(func(L *lua.LState) int {
				t := L.CheckTable(1)
				sep := len(L.OptString(2, ""))
				i := L.OptInt(3, 1)
				j := L.OptInt(4, t.Len())
				if j-i > LuaMaxString {
					L.RaiseError("table.concat: more than %d items", LuaMaxString)
				}
				total := 0
				for k := i; k <= j; k++ {
					total += len(lua.LVAsString(t.RawGetInt(k))) + sep
					if total > LuaMaxString {
						L.RaiseError("table.concat: result larger than %d bytes", LuaMaxString)
					}
				}
				top := L.GetTop()
				L.Push(concat)
				for k := 1; k <= top; k++ {
					L.Push(L.Get(k))
				}
				L.Call(top, 1)
				return 1
			}))
		}
	}
	return nil
}

// checkPattern refuses a match whose backtracking worst case is too costly: gopher-lua's
// matcher runs in Go, where the instruction and time bounds cannot stop it.
func checkPattern(L *lua.LState, fn, s, pat string) {
	q := 0
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '%':
			i++
		case '*', '+', '-', '?':
			q++
		}
	}
	if q == 0 {
		return
	}
	if math.Pow(float64(len(s)+1), float64(q+1)) > luaMaxPatternCost {
		L.RaiseError("string.%s: pattern %q with %d repetitions is too costly on a string of %d bytes", fn, pat, q, len(s))
	}
}

// toLua converts a decoded JSON value into Lua values: objects and arrays become tables
// (arrays indexed from 1), numbers numbers, null nil.
func toLua(L *lua.LState, v any, depth int) lua.LValue {
	if depth > 100 {
		return lua.LNil
	}
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case int64:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case int32:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case float32:
		return lua.LNumber(x)
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, toLua(L, e, depth+1))
		}
		return t
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			t.RawSetInt(i+1, toLua(L, e, depth+1))
		}
		return t
	default:
		return lua.LString(fmt.Sprint(x))
	}
}
