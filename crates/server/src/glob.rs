//! Glob-style pattern matching with Redis's exact rules (`stringmatchlen`):
//! `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\x` escapes. Used by KEYS, SCAN
//! MATCH, CONFIG GET and, later, PSUBSCRIBE.

/// Whether `s` matches `pattern`; `nocase` folds ASCII case.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    // Redis bounds recursion on `*`; an iterative backtracking matcher is
    // linear in practice and cannot overflow the stack on hostile patterns.
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    loop {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' if i < s.len() => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' if i < s.len() => {
                    if let Some((matched, next)) = class(pattern, p, s[i], nocase) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() && i < s.len() => {
                    if eq(pattern[p + 1], s[i]) {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c if i < s.len()
                    && c != b'?'
                    && c != b'['
                    && (c != b'\\' || p + 1 == pattern.len()) =>
                {
                    if eq(c, s[i]) {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
                _ => {}
            }
        } else if i == s.len() {
            return true;
        }
        // Mismatch: backtrack to the last `*`, letting it eat one more byte.
        match star {
            Some((sp, si)) if si < s.len() => {
                star = Some((sp, si + 1));
                p = sp;
                i = si + 1;
            }
            _ => return false,
        }
    }
}

/// Matches `c` against the class starting at `pattern[start] == '['`.
/// Returns (matched, index after the class). An unterminated class runs to
/// the end of the pattern, as in Redis.
fn class(pattern: &[u8], start: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut p = start + 1;
    let not = pattern.get(p) == Some(&b'^');
    if not {
        p += 1;
    }
    let fold = |x: u8| if nocase { x.to_ascii_lowercase() } else { x };
    let c = fold(c);
    let mut matched = false;
    loop {
        match pattern.get(p) {
            None => {
                // Redis treats the end of pattern as closing the class and
                // steps back so the outer loop sees the end.
                return Some((matched != not, p));
            }
            Some(b']') => break,
            Some(b'\\') if p + 1 < pattern.len() => {
                p += 1;
                if fold(pattern[p]) == c {
                    matched = true;
                }
            }
            Some(&lo) if p + 2 < pattern.len() && pattern[p + 1] == b'-' => {
                let hi = pattern[p + 2];
                let (mut a, mut b) = (fold(lo), fold(hi));
                if a > b {
                    std::mem::swap(&mut a, &mut b);
                }
                if c >= a && c <= b {
                    matched = true;
                }
                p += 2;
            }
            Some(&x) => {
                if fold(x) == c {
                    matched = true;
                }
            }
        }
        p += 1;
    }
    Some((matched != not, p + 1))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_glob_rules() {
        let yes: &[(&str, &str)] = &[
            ("*", ""),
            ("*", "abc"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h[b-a]llo", "hallo"),
            ("h\\*llo", "h*llo"),
            ("*a*b*c", "xxaxxbxxc"),
            ("key:*", "key:000000000001"),
        ];
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("h[a-b]llo", "hcllo"),
            ("h\\*llo", "hello"),
            ("a*b", "a"),
            ("", "a"),
        ];
        for (p, s) in yes {
            assert!(matches(p.as_bytes(), s.as_bytes(), false), "{p} ~ {s}");
        }
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes(), false), "{p} !~ {s}");
        }
        assert!(matches(b"MAX*", b"maxmemory", true));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let p = "a*".repeat(50) + "b";
        let s = "a".repeat(100);
        assert!(!matches(p.as_bytes(), s.as_bytes(), false));
    }
}
