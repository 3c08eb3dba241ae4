package bytesize

import "testing"

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{4 << 30: "4GiB", 1536 << 20: "1.5GiB", 100: "100B", 58_200_000_000: "54.2GiB",
		0: "0B", 1024: "1KiB", 60000: "58.6KiB", 3 << 20: "3MiB", 5 << 40: "5TiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %s, want %s", n, got, want)
		}
	}
}
