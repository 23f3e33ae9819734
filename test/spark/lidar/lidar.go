// Package lidar writes the seed's LiDAR point cloud for the Spark tests
// and reads what a clean of it (lidar_clean.py: keep the points whose
// intensity is above 0.1, and of them x, y, z) wrote, so a test compares
// the two: how many points, and an order-free checksum of them.
package lidar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
)

// Point is one LiDAR return, as the input dataset stores it.
type Point struct {
	X         float32 `parquet:"x"`
	Y         float32 `parquet:"y"`
	Z         float32 `parquet:"z"`
	Intensity float32 `parquet:"intensity"`
}

// Cleaned is a row of the cleaned output, as Spark writes it (nullable
// columns).
type Cleaned struct {
	X *float32 `parquet:"x,optional"`
	Y *float32 `parquet:"y,optional"`
	Z *float32 `parquet:"z,optional"`
}

// Figures are what a test knows of a set of points: how many, and an
// order-free checksum of their x, y, z (the sum of each point's FNV-1a).
type Figures struct {
	Points int
	Sum    uint64
}

// Add counts one point.
func (f *Figures) Add(x, y, z float32) {
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:], math.Float32bits(x))
	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(y))
	binary.LittleEndian.PutUint32(b[8:], math.Float32bits(z))
	h := fnv.New64a()
	_, _ = h.Write(b[:])
	f.Points++
	f.Sum += h.Sum64()
}

// WritePoints writes n deterministic points into files Parquet files in
// dir (part-NN.parquet) and returns the figures of those a clean keeps
// (intensity > 0.1, compared in double precision as Spark compares a
// float column with the literal 0.1: float32(0.1) is kept). Every 1000th
// point has that intensity exactly. 3,000,000 points in 4 files keep
// 2,700,311.
func WritePoints(dir string, n, files int) (Figures, error) {
	var keep Figures
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return keep, err
	}
	rng := rand.New(rand.NewPCG(2024, 5))
	per := n / files
	for f := 0; f < files; f++ {
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%02d.parquet", f)))
		if err != nil {
			return keep, err
		}
		w := parquet.NewGenericWriter[Point](out)
		batch := make([]Point, 0, 8192)
		for i := 0; i < per && err == nil; i++ {
			p := Point{X: rng.Float32()*200 - 100, Y: rng.Float32()*200 - 100, Z: rng.Float32()*10 - 2, Intensity: rng.Float32()}
			if (f*per+i)%1000 == 0 {
				p.Intensity = 0.1
			}
			if float64(p.Intensity) > 0.1 {
				keep.Add(p.X, p.Y, p.Z)
			}
			if batch = append(batch, p); len(batch) == cap(batch) {
				_, err = w.Write(batch)
				batch = batch[:0]
			}
		}
		if err == nil {
			_, err = w.Write(batch)
		}
		err = errors.Join(err, w.Close(), out.Close())
		if err != nil {
			return keep, fmt.Errorf("write %s: %w", out.Name(), err)
		}
	}
	return keep, nil
}

// ReadCleaned reads the figures of the Parquet files (part-*.parquet)
// Spark wrote to dir, which must hold Spark's _SUCCESS (the job
// committed) and no nulls.
func ReadCleaned(dir string) (Figures, error) {
	var got Figures
	parts, err := filepath.Glob(filepath.Join(dir, "part-*.parquet"))
	if err != nil {
		return got, err
	}
	if len(parts) == 0 {
		return got, fmt.Errorf("no part-*.parquet in %s: Spark wrote none there", dir)
	}
	for _, p := range parts {
		rows, err := parquet.ReadFile[Cleaned](p)
		if err != nil {
			return got, fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range rows {
			if r.X == nil || r.Y == nil || r.Z == nil {
				return got, fmt.Errorf("%s: a null in a cleaned point", p)
			}
			got.Add(*r.X, *r.Y, *r.Z)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "_SUCCESS")); err != nil {
		return got, fmt.Errorf("Spark did not commit its output: %w", err)
	}
	return got, nil
}
