package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spiderenv/spider/agents"
	"github.com/spiderenv/spider/env"
)

// TestCSVRoundTrip checks that positions written by -csv read back exactly
// under -from, so a fit from files is the fit from the games.
func TestCSVRoundTrip(t *testing.T) {
	x := make([][agents.NumValueFeatures]float64, 3)
	for i := range x {
		for j := range x[i] {
			x[i][j] = float64(i*j)/7 - 0.1
		}
	}
	y := []float64{1, 0, 1}
	at := [][2]uint64{{2001, 0}, {2001, 2}, {2002, 0}}
	path := filepath.Join(t.TempDir(), "p.csv")
	if err := writeCSV(path, x, y, at); err != nil {
		t.Fatal(err)
	}
	gx, gy, gat, err := readCSVs([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if len(gx) != 3 || len(gy) != 3 || len(gat) != 3 {
		t.Fatalf("read %d positions, want 3", len(gx))
	}
	for i := range x {
		if gx[i] != x[i] || gy[i] != y[i] || gat[i] != at[i] {
			t.Errorf("position %d: read %v %v %v, wrote %v %v %v", i, gx[i], gy[i], gat[i], x[i], y[i], at[i])
		}
	}
	if n := countGames(gat); n != 2 {
		t.Errorf("countGames = %d, want 2", n)
	}
}

// TestCountGamesTwoPlayers checks that the games of two players on the
// same seed, as -from reads them from two files, count as two games.
func TestCountGamesTwoPlayers(t *testing.T) {
	at := [][2]uint64{{2001, 0}, {2001, 2}, {2001, 4}, {2001, 0}, {2001, 2}, {2002, 0}}
	if n := countGames(at); n != 3 {
		t.Errorf("countGames = %d, want 3", n)
	}
}

// TestReadCSVsRejects checks that a malformed line is an error naming its
// file and line.
func TestReadCSVsRejects(t *testing.T) {
	good := "2001,0,1" + strings.Repeat(",0.5", agents.NumValueFeatures)
	for name, bad := range map[string]string{
		"short":   "2001,0,1,0.5",
		"outcome": "2001,0,2" + strings.Repeat(",0.5", agents.NumValueFeatures),
		"seed":    "x,0,1" + strings.Repeat(",0.5", agents.NumValueFeatures),
		"nan":     "2001,0,1" + strings.Repeat(",NaN", agents.NumValueFeatures),
	} {
		path := filepath.Join(t.TempDir(), name+".csv")
		if err := os.WriteFile(path, []byte(good+"\n"+bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := readCSVs([]string{path})
		if err == nil || !strings.Contains(err.Error(), name+".csv:2:") {
			t.Errorf("%s: err = %v, want one naming line 2", name, err)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.csv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := readCSVs([]string{empty}); err == nil {
		t.Error("an empty file read without error")
	}
}

// TestPlaySuitsAndNodes: -suits and -nodes reach the games play plays:
// every position of a four-suit game of search at 200 nodes, as
// agents.Play plays it, and not the one-suit game of the same seed.
func TestPlaySuitsAndNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("plays two games of search")
	}
	r4 := env.MustRules(env.Options{Suits: 4})
	want := agents.Play(r4, 7, &agents.Search{HandOnly: true, Nodes: 200})
	x, y, at := play([]uint64{7}, 4, 200, 0, 1, 1, true)
	if len(x) != len(want.Actions) || len(y) != len(x) || len(at) != len(x) {
		t.Fatalf("%d positions (%d outcomes, %d places) of a game of %d moves", len(x), len(y), len(at), len(want.Actions))
	}
	// The first position is the four-suit deal's.
	first := env.NewGame(r4, 7)
	var f [agents.NumValueFeatures]float64
	agents.ValueFeatures(&f, &first, -1, 0, make([]env.Card, env.NumCards))
	if x[0] != f || at[0] != [2]uint64{7, 0} {
		t.Fatalf("first position %v at %v, want the four-suit deal's %v", x[0], at[0], f)
	}
	one := agents.Play(env.MustRules(env.Options{Suits: 1}), 7, &agents.Search{HandOnly: true, Nodes: 200})
	if len(one.Actions) == len(want.Actions) {
		t.Fatalf("the one-suit game of seed 7 has as many moves (%d): the test cannot tell the two apart", len(one.Actions))
	}
}

// TestPlayDraw: -draw reaches search (agents.Search.Draw): the game
// play records at draw 3 is the one agents.Play plays with that draw, and
// not draw 0's.
func TestPlayDraw(t *testing.T) {
	if testing.Short() {
		t.Skip("plays two games of search")
	}
	r4 := env.MustRules(env.Options{Suits: 4})
	want := agents.Play(r4, 7, &agents.Search{HandOnly: true, Nodes: 200, Draw: 3})
	other := agents.Play(r4, 7, &agents.Search{HandOnly: true, Nodes: 200})
	if reflect.DeepEqual(want.Actions, other.Actions) {
		t.Fatal("draws 0 and 3 play the same game: the test cannot tell them apart")
	}
	x, _, _ := play([]uint64{7}, 4, 200, 3, 1, 1, true)
	if len(x) != len(want.Actions) {
		t.Fatalf("%d positions at draw 3; its game has %d moves (draw 0's %d)", len(x), len(want.Actions), len(other.Actions))
	}
	s := env.NewGame(r4, 7)
	buf := make([]env.Card, env.NumCards)
	for i, a := range want.Actions {
		var f [agents.NumValueFeatures]float64
		agents.ValueFeatures(&f, &s, -1, 0, buf)
		if x[i] != f {
			t.Fatalf("position %d is not draw 3's", i)
		}
		s.Step(a)
	}
}
