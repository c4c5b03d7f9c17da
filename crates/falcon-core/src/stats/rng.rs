//! Small seeded pseudo-random generators.
//!
//! `falcon-core` never asks the operating system for randomness: every resampling and permutation takes a
//! seed, so the same inputs always give the same verdict. Two classic generators are written out here:
//!
//! - [`SplitMix64`] (Steele, Lea and Flood, 2014): a 64-bit counter passed through an avalanching mixer. Used
//!   to expand one seed into a full state, and to derive independent streams (one per window, say).
//! - [`Rng`], xoshiro256** (Blackman and Vigna, 2018): 256 bits of state, period 2^256 − 1, good statistical
//!   quality and a few nanoseconds per draw. Used for everything else.
//!
//! Neither is cryptographic; both are plenty for bootstrap resampling and permutation tests.

/// SplitMix64: state += golden-ratio increment, then a three-step xor-shift-multiply finaliser.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed` (any value, zero included).
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// xoshiro256**, seeded through [`SplitMix64`].
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole state is derived from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        let mut s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        if s == [0; 4] {
            // The one state xoshiro cannot leave; SplitMix64 practically never yields it, but be exact.
            s[0] = 1;
        }
        Rng { s }
    }

    /// An independent stream `stream` of the generator seeded with `seed` (e.g. one per window), so that
    /// results do not depend on the order in which streams are consumed.
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut sm = SplitMix64::new(seed ^ 0xD1B5_4A32_D192_ED03);
        let base = sm.next_u64();
        Rng::new(base ^ SplitMix64::new(stream).next_u64())
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in `[0, 1)`, with the 53 bits a double can hold.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[0, n)`, without modulo bias (Lemire's multiply-and-reject). `n == 0` gives 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let n = n as u64;
        let mut wide = u128::from(self.next_u64()) * u128::from(n);
        if (wide as u64) < n {
            // Reject the few low products that would make some results more likely than others.
            let threshold = n.wrapping_neg() % n;
            while (wide as u64) < threshold {
                wide = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (wide >> 64) as usize
    }

    /// A standard normal draw by the Box–Muller transform (one of the pair; the other is discarded, which
    /// keeps the generator's state the only state).
    pub fn standard_normal(&mut self) -> f64 {
        // u1 in (0, 1] so that ln(u1) is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Normal with the given mean and standard deviation.
    pub fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        mean + sd * self.standard_normal()
    }

    /// Shuffles `items` in place (Fisher–Yates, every permutation equally likely).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs of SplitMix64 seeded with 0, as published with the reference C implementation
        // (and reproduced by e.g. Java's SplittableRandom with the same gamma).
        let mut sm = SplitMix64::new(0);
        assert_eq!(sm.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(sm.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn deterministic_and_streams_differ() {
        let a: Vec<u64> = (0..5).scan(Rng::new(7), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..5).scan(Rng::new(7), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(Rng::stream(7, 0).next_u64(), Rng::stream(7, 1).next_u64());
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut r = Rng::new(1);
        let mut counts = [0usize; 7];
        for _ in 0..70_000 {
            counts[r.below(7)] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.below(1), 0);
    }

    #[test]
    fn normal_moments() {
        let mut r = Rng::new(3);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal(10.0, 2.0)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((mean - 10.0).abs() < 0.03, "{mean}");
        assert!((var.sqrt() - 2.0).abs() < 0.03, "{var}");
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut r = Rng::new(5);
        let mut v: Vec<u32> = (0..100).collect();
        r.shuffle(&mut v);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
    }
}
