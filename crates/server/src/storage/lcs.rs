//! The longest common subsequence of two strings, as Redis's LCS computes
//! it: the classic dynamic-programming table, then one walk back from the
//! end that yields the subsequence and its matching ranges (last first,
//! in Redis's order, so replies match byte for byte).

/// A run of matching bytes: positions in the first and second string
/// (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub a: (usize, usize),
    pub b: (usize, usize),
}

impl Match {
    /// Bytes in the run (the same in both strings).
    pub fn match_len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// The LCS of `a` and `b` and its ranges of at least `min_len` bytes (0:
/// all).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lcs {
    pub subsequence: Vec<u8>,
    pub matches: Vec<Match>,
}

/// Bytes the table for `a` and `b` takes, as Redis sizes it (`u32` cells,
/// `(|a| + 1) × (|b| + 1)`), or None if that does not fit in a `usize`.
pub fn table_bytes(a: usize, b: usize) -> Option<usize> {
    (a.checked_add(1)?)
        .checked_mul(b.checked_add(1)?)?
        .checked_mul(4)
}

/// Computes the LCS; None if the table cannot be allocated.
pub fn lcs(a: &[u8], b: &[u8], min_len: usize) -> Option<Lcs> {
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen + 1).checked_mul(blen + 1)?;
    let mut t: Vec<u32> = Vec::new();
    t.try_reserve_exact(cells).ok()?;
    t.resize(cells, 0);
    let at = |i: usize, j: usize| j + i * (blen + 1);
    for i in 1..=alen {
        for j in 1..=blen {
            t[at(i, j)] = if a[i - 1] == b[j - 1] {
                t[at(i - 1, j - 1)] + 1
            } else {
                t[at(i - 1, j)].max(t[at(i, j - 1)])
            };
        }
    }
    let mut idx = t[at(alen, blen)] as usize;
    let mut out = Lcs {
        subsequence: vec![0; idx],
        matches: Vec::new(),
    };
    // The walk of Redis's lcsCommand: a range grows backwards while the
    // matches stay contiguous in both strings, and is emitted when they
    // stop (or reach the start of either string).
    let (mut i, mut j) = (alen, blen);
    let mut current: Option<Match> = None;
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            out.subsequence[idx - 1] = a[i - 1];
            match current.as_mut() {
                None => {
                    current = Some(Match {
                        a: (i - 1, i - 1),
                        b: (j - 1, j - 1),
                    })
                }
                Some(m) if m.a.0 == i && m.b.0 == j => {
                    m.a.0 -= 1;
                    m.b.0 -= 1;
                }
                Some(_) => emit = true,
            }
            if let Some(m) = current {
                if m.a.0 == 0 || m.b.0 == 0 {
                    emit = true;
                }
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[at(i - 1, j)] > t[at(i, j - 1)] {
                i -= 1;
            } else {
                j -= 1;
            }
            if current.is_some() {
                emit = true;
            }
        }
        if emit {
            if let Some(m) = current.take() {
                if min_len == 0 || m.match_len() >= min_len {
                    out.matches.push(m);
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_documentation_example() {
        // LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN on "ohmytext" and
        // "mynewtext", from the Redis command documentation.
        let r = lcs(b"ohmytext", b"mynewtext", 0).unwrap();
        assert_eq!(r.subsequence, b"mytext");
        assert_eq!(
            r.matches,
            vec![
                Match {
                    a: (4, 7),
                    b: (5, 8)
                },
                Match {
                    a: (2, 3),
                    b: (0, 1)
                },
            ]
        );
        let r = lcs(b"ohmytext", b"mynewtext", 4).unwrap();
        assert_eq!(
            r.matches,
            vec![Match {
                a: (4, 7),
                b: (5, 8)
            }]
        );
        assert_eq!(lcs(b"", b"abc", 0).unwrap(), Lcs::default());
    }
}
