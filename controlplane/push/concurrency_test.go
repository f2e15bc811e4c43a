package push

import "testing"

func TestDefaultConcurrency(t *testing.T) {
	tests := []struct{ cores, want int }{
		{-3, 20}, {0, 20}, {1, 20}, {2, 25}, {4, 35}, {8, 55}, {16, 95}, {17, 100}, {64, 100},
	}
	for _, tt := range tests {
		if got := DefaultConcurrency(tt.cores); got != tt.want {
			t.Errorf("DefaultConcurrency(%d) = %d, want %d", tt.cores, got, tt.want)
		}
	}
}
