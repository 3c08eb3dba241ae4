package env

import "fmt"

// Suit is one of the four French suits. The order matters: a game with n
// suits uses the first n of them (1: spades; 2: spades, hearts; 4: all).
type Suit uint8

// The suits, in the order in which games with fewer suits use them.
const (
	Spades Suit = iota
	Hearts
	Diamonds
	Clubs
)

// NumSuits is the number of suits in a full deck.
const NumSuits = 4

var suitLetters = [NumSuits]byte{'s', 'h', 'd', 'c'}
var suitNames = [NumSuits]string{"spades", "hearts", "diamonds", "clubs"}

// String returns the suit's name, such as "spades".
func (s Suit) String() string {
	if s >= NumSuits {
		return fmt.Sprintf("Suit(%d)", uint8(s))
	}
	return suitNames[s]
}

// Letter returns the one-letter code used in card notation: s, h, d or c.
func (s Suit) Letter() byte {
	if s >= NumSuits {
		return '?'
	}
	return suitLetters[s]
}

// Rank is a card's rank, Ace (1, low) to King (13, high).
type Rank uint8

// The ranks that have names.
const (
	Ace   Rank = 1
	Jack  Rank = 11
	Queen Rank = 12
	King  Rank = 13
)

// NumRanks is the number of ranks in a suit.
const NumRanks = 13

const rankLetters = "?A23456789TJQK"

// String returns the rank's one-letter code: A, 2-9, T, J, Q or K.
func (r Rank) String() string {
	if r < Ace || r > King {
		return fmt.Sprintf("Rank(%d)", uint8(r))
	}
	return rankLetters[r : r+1]
}

// Card is one card: 0 means no card, 1-52 are suit*13 + rank. The code is
// also the card's value in the compact observation, so it must never change.
type Card uint8

// NoCard is the zero Card: an empty slot.
const NoCard Card = 0

// MakeCard returns the card of rank r and suit s.
// It panics if r or s is out of range, which is a programming error.
func MakeCard(r Rank, s Suit) Card {
	if r < Ace || r > King || s >= NumSuits {
		panic(fmt.Sprintf("env: MakeCard(%d, %d) out of range", r, s))
	}
	return Card(uint8(s)*NumRanks + uint8(r))
}

// Rank returns the card's rank.
func (c Card) Rank() Rank { return cardRank[c] }

// Suit returns the card's suit.
func (c Card) Suit() Suit { return cardSuit[c] }

// cardRank and cardSuit decode every byte value, so the hot paths look a
// card up instead of dividing by 13. Codes past 52 decode as if the code
// were arithmetic, which only Validate and error messages ever see.
var cardRank, cardSuit = func() (r [256]Rank, s [256]Suit) {
	for i := range 256 {
		c := uint8(i)
		r[i] = Rank((c-1)%NumRanks + 1)
		s[i] = Suit((c - 1) / NumRanks)
	}
	return r, s
}()

// Valid reports whether c is a real card (not NoCard or out of range).
func (c Card) Valid() bool { return c >= 1 && c <= NumSuits*NumRanks }

// String returns the card in two letters, rank then suit, such as "Ks" or
// "Th"; NoCard is "--".
func (c Card) String() string {
	if c == NoCard {
		return "--"
	}
	if !c.Valid() {
		return fmt.Sprintf("Card(%d)", uint8(c))
	}
	return string([]byte{rankLetters[c.Rank()], c.Suit().Letter()})
}

// ParseCard reads a card written as by Card.String, such as "Ks" or "th".
func ParseCard(s string) (Card, error) {
	if len(s) != 2 {
		return NoCard, fmt.Errorf("env: card %q: want two letters, rank then suit, like \"Ks\"", s)
	}
	r := Rank(0)
	for i := Ace; i <= King; i++ {
		if rankLetters[i] == upper(s[0]) {
			r = i
		}
	}
	if r == 0 {
		return NoCard, fmt.Errorf("env: card %q: unknown rank %q (want one of A23456789TJQK)", s, s[0])
	}
	for i := Suit(0); i < NumSuits; i++ {
		if suitLetters[i] == lower(s[1]) {
			return MakeCard(r, i), nil
		}
	}
	return NoCard, fmt.Errorf("env: card %q: unknown suit %q (want one of s, h, d, c)", s, s[1])
}

// upper returns the ASCII letter b in upper case; other bytes unchanged.
func upper(b byte) byte {
	if b >= 'a' && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

// lower returns the ASCII letter b in lower case; other bytes unchanged.
func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b - 'A' + 'a'
	}
	return b
}
