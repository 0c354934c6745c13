//! ZUNION, ZINTER, ZDIFF and ZINTERCARD as Redis's
//! zunionInterDiffGenericCommand computes them, over sources that are
//! sorted sets, plain sets (every member scored 1) or missing keys. Pure:
//! the sources are read through [`Sources`], the result is returned typed,
//! and the command builds the reply or stores it.

use std::collections::HashMap;

/// Which combination of the sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Inter,
    Diff,
}

/// How the scores of a member found in several sources combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Sum,
    Min,
    Max,
}

/// The inputs, by position. A missing key has length 0 and no members.
/// Reading through a trait lets the command look each key up in its
/// locked view as it goes, one at a time, as Redis does.
pub trait Sources {
    /// How many members the source at `i` has.
    fn len(&mut self, i: usize) -> usize;
    /// Calls `f` with every (member, score) of the source at `i`.
    fn each(&mut self, i: usize, f: &mut dyn FnMut(&[u8], f64));
    /// The score of `member` in the source at `i`.
    fn score(&mut self, i: usize, member: &[u8]) -> Option<f64>;
}

/// Folds `v` into `target` (a SUM that turns NaN, as `inf + -inf`, is 0).
fn aggregate(target: &mut f64, v: f64, agg: Aggregate) {
    match agg {
        Aggregate::Sum => {
            *target += v;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if v < *target {
                *target = v;
            }
        }
        Aggregate::Max => {
            if v > *target {
                *target = v;
            }
        }
    }
}

/// A weighted score (NaN, as `0 * inf`, is 0).
fn weighted(score: f64, weight: f64) -> f64 {
    let v = weight * score;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// The (score, member) pairs of `op` over `n` sources, in no particular
/// order. `weights` has one weight per source (ZDIFF ignores them).
pub fn combine(
    src: &mut impl Sources,
    n: usize,
    op: SetOp,
    weights: &[f64],
    agg: Aggregate,
) -> Vec<(f64, Vec<u8>)> {
    let sizes: Vec<usize> = (0..n).map(|i| src.len(i)).collect();
    match op {
        SetOp::Union => {
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            for (i, &w) in weights.iter().enumerate().take(n) {
                if sizes[i] == 0 {
                    continue;
                }
                src.each(i, &mut |m, s| {
                    let v = weighted(s, w);
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, v, agg),
                        None => {
                            acc.insert(m.to_vec(), v);
                        }
                    }
                });
            }
            acc.into_iter().map(|(m, s)| (s, m)).collect()
        }
        SetOp::Inter => {
            let mut result = Vec::new();
            intersect(src, &sizes, weights, agg, |score, m| {
                result.push((score, m));
                true
            });
            result
        }
        SetOp::Diff => {
            let mut result = Vec::new();
            if n == 0 || sizes[0] == 0 {
                return result;
            }
            let mut candidates: Vec<(f64, Vec<u8>)> = Vec::with_capacity(sizes[0]);
            src.each(0, &mut |m, s| candidates.push((s, m.to_vec())));
            'next: for (s, m) in candidates {
                for (i, &size) in sizes.iter().enumerate().skip(1) {
                    if size > 0 && src.score(i, &m).is_some() {
                        continue 'next;
                    }
                }
                result.push((s, m));
            }
            result
        }
    }
}

/// ZINTERCARD: how many members every one of `n` sources has, counting
/// no further than `limit` (0 = no limit).
pub fn inter_card(src: &mut impl Sources, n: usize, limit: usize) -> usize {
    let sizes: Vec<usize> = (0..n).map(|i| src.len(i)).collect();
    let weights = vec![1.0; n];
    let mut count = 0;
    intersect(src, &sizes, &weights, Aggregate::Sum, |_, _| {
        count += 1;
        limit == 0 || count < limit
    });
    count
}

/// Calls `found` with every member of the intersection and its combined
/// score, until it answers false. The smallest source is walked and the
/// others probed, in order of size (a stable sort, as Redis's qsort by
/// cardinality gives for equal sizes).
fn intersect(
    src: &mut impl Sources,
    sizes: &[usize],
    weights: &[f64],
    agg: Aggregate,
    mut found: impl FnMut(f64, Vec<u8>) -> bool,
) {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let Some(&first) = order.first() else {
        return;
    };
    if sizes[first] == 0 {
        return;
    }
    let mut candidates: Vec<(f64, Vec<u8>)> = Vec::with_capacity(sizes[first]);
    let w = weights[first];
    src.each(first, &mut |m, s| {
        candidates.push((weighted(s, w), m.to_vec()))
    });
    'next: for (mut score, m) in candidates {
        for &i in &order[1..] {
            match src.score(i, &m) {
                Some(v) => aggregate(&mut score, v * weights[i], agg),
                None => continue 'next,
            }
        }
        if !found(score, m) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sources as lists of (member, score); `None` is a missing key.
    struct Lists(Vec<Option<Vec<(&'static str, f64)>>>);

    impl Sources for Lists {
        fn len(&mut self, i: usize) -> usize {
            self.0[i].as_ref().map_or(0, Vec::len)
        }
        fn each(&mut self, i: usize, f: &mut dyn FnMut(&[u8], f64)) {
            for (m, s) in self.0[i].iter().flatten() {
                f(m.as_bytes(), *s);
            }
        }
        fn score(&mut self, i: usize, member: &[u8]) -> Option<f64> {
            let list = self.0[i].as_ref()?;
            list.iter()
                .find(|(m, _)| m.as_bytes() == member)
                .map(|(_, s)| *s)
        }
    }

    fn sorted(mut v: Vec<(f64, Vec<u8>)>) -> Vec<(f64, String)> {
        v.sort_by(|a, b| crate::storage::zset::cmp_key(a.0, &a.1, b.0, &b.1));
        v.into_iter()
            .map(|(s, m)| (s, String::from_utf8(m).unwrap()))
            .collect()
    }

    fn pairs(v: &[(f64, &str)]) -> Vec<(f64, String)> {
        v.iter().map(|(s, m)| (*s, m.to_string())).collect()
    }

    #[test]
    fn union_weighs_and_aggregates() {
        let mut src = Lists(vec![
            Some(vec![("a", 1.0), ("b", 2.0)]),
            None,
            Some(vec![("b", 3.0), ("c", 4.0)]),
        ]);
        let w = [2.0, 1.0, 10.0];
        let sum = combine(&mut src, 3, SetOp::Union, &w, Aggregate::Sum);
        assert_eq!(sorted(sum), pairs(&[(2.0, "a"), (34.0, "b"), (40.0, "c")]));
        let min = combine(&mut src, 3, SetOp::Union, &w, Aggregate::Min);
        assert_eq!(sorted(min), pairs(&[(2.0, "a"), (4.0, "b"), (40.0, "c")]));
        let max = combine(&mut src, 3, SetOp::Union, &w, Aggregate::Max);
        assert_eq!(sorted(max), pairs(&[(2.0, "a"), (30.0, "b"), (40.0, "c")]));
    }

    #[test]
    fn nan_from_weights_and_sums_is_zero() {
        let mut src = Lists(vec![
            Some(vec![("a", f64::INFINITY)]),
            Some(vec![("a", f64::NEG_INFINITY)]),
        ]);
        // inf + -inf is NaN: Redis stores 0.
        let sum = combine(&mut src, 2, SetOp::Union, &[1.0, 1.0], Aggregate::Sum);
        assert_eq!(sorted(sum), pairs(&[(0.0, "a")]));
        let inter = combine(&mut src, 2, SetOp::Inter, &[1.0, 1.0], Aggregate::Sum);
        assert_eq!(sorted(inter), pairs(&[(0.0, "a")]));
        // 0 * inf is NaN: 0.
        let zero = combine(&mut src, 1, SetOp::Union, &[0.0], Aggregate::Sum);
        assert_eq!(sorted(zero), pairs(&[(0.0, "a")]));
    }

    #[test]
    fn inter_walks_the_smallest_and_keeps_common_members() {
        let mut src = Lists(vec![
            Some(vec![("a", 1.0), ("b", 2.0), ("c", 3.0)]),
            Some(vec![("c", 5.0), ("a", 7.0)]),
        ]);
        let r = combine(&mut src, 2, SetOp::Inter, &[1.0, 2.0], Aggregate::Sum);
        assert_eq!(sorted(r), pairs(&[(13.0, "c"), (15.0, "a")]));
        let mut empty = Lists(vec![Some(vec![("a", 1.0)]), None]);
        assert!(combine(&mut empty, 2, SetOp::Inter, &[1.0, 1.0], Aggregate::Sum).is_empty());
    }

    #[test]
    fn diff_keeps_the_first_sources_scores() {
        let mut src = Lists(vec![
            Some(vec![("a", 1.0), ("b", 2.0), ("c", 3.0)]),
            Some(vec![("b", 9.0)]),
            None,
            Some(vec![("c", 0.0)]),
        ]);
        let r = combine(&mut src, 4, SetOp::Diff, &[5.0; 4], Aggregate::Max);
        assert_eq!(sorted(r), pairs(&[(1.0, "a")]));
        let mut missing_first = Lists(vec![None, Some(vec![("a", 1.0)])]);
        assert!(combine(
            &mut missing_first,
            2,
            SetOp::Diff,
            &[1.0; 2],
            Aggregate::Sum
        )
        .is_empty());
    }

    #[test]
    fn inter_card_stops_at_the_limit() {
        let mut src = Lists(vec![
            Some(vec![("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]),
            Some(vec![("a", 0.0), ("b", 0.0), ("c", 0.0), ("e", 0.0)]),
        ]);
        assert_eq!(inter_card(&mut src, 2, 0), 3);
        assert_eq!(inter_card(&mut src, 2, 2), 2);
        assert_eq!(inter_card(&mut src, 2, 10), 3);
        let mut with_missing = Lists(vec![Some(vec![("a", 1.0)]), None]);
        assert_eq!(inter_card(&mut with_missing, 2, 0), 0);
    }
}
