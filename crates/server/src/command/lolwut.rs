//! LOLWUT [VERSION version] [args]: Redis's computer art. Version 5 draws
//! Georg Nees' Schotter in braille, version 6 a skyline in terminal grays,
//! any other version (7.0's own included) only the version line.
//!
//! The drawing follows Redis's lolwut5.c/lolwut6.c step by step, in the
//! same float/double precision, so that a drawing that uses no random
//! numbers (Schotter with fewer than three rows, a one-row skyline) is
//! byte for byte Redis's. The random numbers themselves come from our own
//! generator: Redis seeds libc's rand() with the time and the pid.

use rand::Rng;

use super::args::{self, is};
use super::error::CmdResult;
use super::table::Registry;
use super::Ctx;

pub(super) fn register(r: &mut Registry) {
    r.add("lolwut", lolwut);
}

/// LOLWUT [VERSION version] [args ...]
fn lolwut(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let version = if argv.len() >= 3 && is(argv[1], "VERSION") {
        // Redis formats the version as "%u.0.0": the cast wraps the same.
        Some(args::int(argv[2])? as u32)
    } else {
        None
    };
    // With VERSION, the drawing's own arguments follow the version number;
    // without, the server's version (7) draws nothing that takes any.
    let params = if version.is_some() {
        &argv[3..]
    } else {
        &[][..]
    };
    let text = match version {
        Some(5) => schotter_command(params)?,
        Some(6) => skyline_command(params)?,
        _ => format!("Redis ver. {}\n", crate::redis_version()).into_bytes(),
    };
    cx.verbatim(&text);
    Ok(())
}

/// Numeric arguments in order, each defaulting, each clamped to `lo..=hi`
/// after parsing (a bad number is an error, an out-of-range one is not).
fn params<const N: usize>(
    argv: &[&[u8]],
    defaults: [i64; N],
    limits: [(i64, i64); N],
) -> Result<[i64; N], super::error::CmdError> {
    let mut out = defaults;
    for (i, v) in out.iter_mut().enumerate() {
        if let Some(a) = argv.get(i) {
            *v = args::int(a)?;
        }
    }
    for (v, (lo, hi)) in out.iter_mut().zip(limits) {
        *v = (*v).clamp(lo, hi);
    }
    Ok(out)
}

/// libc's rand(): 0..=RAND_MAX.
const RAND_MAX: i32 = i32::MAX;

fn crand(rng: &mut impl Rng) -> i32 {
    rng.gen_range(0..=RAND_MAX)
}

/// A canvas of `width * height` pixels of color 0..=3, as lwCanvas.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32, bg: u8) -> Canvas {
        let n = width.max(0) as usize * height.max(0) as usize;
        Canvas {
            width,
            height,
            pixels: vec![bg; n],
        }
    }

    /// Drawing outside the canvas is ignored, as lwDrawPixel.
    fn set(&mut self, x: i32, y: i32, color: u8) {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return;
        }
        self.pixels[(x + y * self.width) as usize] = color;
    }

    fn get(&self, x: i32, y: i32) -> u8 {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return 0;
        }
        self.pixels[(x + y * self.width) as usize]
    }

    /// Bresenham, as lwDrawLine.
    fn line(&mut self, mut x1: i32, mut y1: i32, x2: i32, y2: i32, color: u8) {
        let dx = (x2 - x1).abs();
        let dy = (y2 - y1).abs();
        let sx = if x1 < x2 { 1 } else { -1 };
        let sy = if y1 < y2 { 1 } else { -1 };
        let mut err = dx - dy;
        loop {
            self.set(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square centred on (x, y), rotated by `angle`, as lwDrawSquare:
    /// C's float variables and double math are kept (f32 stores, f64 ops)
    /// so that the rounded corners land on the same pixels.
    fn square(&mut self, x: i32, y: i32, size: f32, angle: f32, color: u8) {
        // Redis's truncated constant, not SQRT_2: the last digits can move a
        // corner by a pixel.
        #[allow(clippy::approx_constant)]
        let size = (size as f64 / 1.4142135623) as f32;
        let size = (size as f64).round() as f32;
        let mut k = (std::f64::consts::FRAC_PI_4 + angle as f64) as f32;
        let mut corners = [(0i32, 0i32); 4];
        for c in &mut corners {
            let px = ((k as f64).sin() * size as f64 + x as f64).round() as i32;
            let py = ((k as f64).cos() * size as f64 + y as f64).round() as i32;
            *c = (px, py);
            k = (k as f64 + std::f64::consts::FRAC_PI_2) as f32;
        }
        for (a, b) in corners.iter().zip(corners.iter().cycle().skip(1)) {
            self.line(a.0, a.1, b.0, b.1, color);
        }
    }
}

/// LOLWUT VERSION 5 [columns] [squares-per-row] [squares-per-col]
fn schotter_command(argv: &[&[u8]]) -> Result<Vec<u8>, super::error::CmdError> {
    let [cols, per_row, per_col] = params(argv, [66, 8, 12], [(1, 1000), (1, 200), (1, 200)])?;
    let canvas = schotter(
        cols as i32,
        per_row as i32,
        per_col as i32,
        &mut rand::thread_rng(),
    );
    let mut text = render_braille(&canvas);
    text.extend_from_slice(b"\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
    text.extend_from_slice(crate::redis_version().as_bytes());
    text.push(b'\n');
    Ok(text)
}

/// Schotter: a grid of squares, rotated and shifted more and more at
/// random from the third row down (lwDrawSchotter).
fn schotter(console_cols: i32, per_row: i32, per_col: i32, rng: &mut impl Rng) -> Canvas {
    let canvas_width = console_cols * 2;
    let padding = if canvas_width > 4 { 2 } else { 0 };
    let side = (canvas_width - padding * 2) as f32 / per_row as f32;
    let canvas_height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Canvas::new(canvas_width, canvas_height, 0);
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            if y > 1 {
                let mut r = [0f32; 3];
                for v in &mut r {
                    *v = crand(rng) as f32 / RAND_MAX as f32 / per_col as f32 * y as f32;
                }
                for v in &mut r {
                    if crand(rng) % 2 != 0 {
                        *v = -*v;
                    }
                }
                angle = r[0];
                sx = (sx as f32 + r[1] * side / 3.0) as i32;
                sy = (sy as f32 + r[2] * side / 3.0) as i32;
            }
            canvas.square(sx, sy, side, angle, 1);
        }
    }
    canvas
}

/// Each 2x4 block of pixels as one braille character (U+2800 + dots).
fn render_braille(canvas: &Canvas) -> Vec<u8> {
    let mut text = Vec::new();
    for y in (0..canvas.height).step_by(4) {
        for x in (0..canvas.width).step_by(2) {
            let dots = [
                (0, 0),
                (0, 1),
                (0, 2),
                (1, 0),
                (1, 1),
                (1, 2),
                (0, 3),
                (1, 3),
            ];
            let mut byte = 0u32;
            for (bit, (dx, dy)) in dots.iter().enumerate() {
                if canvas.get(x + dx, y + dy) != 0 {
                    byte |= 1 << bit;
                }
            }
            let ch = char::from_u32(0x2800 + byte).unwrap_or(' ');
            let mut buf = [0u8; 4];
            text.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        // Redis compares the row index, not the block, with the last row,
        // so most drawings end with an empty line: kept.
        if y != canvas.height - 1 {
            text.push(b'\n');
        }
    }
    text
}

/// LOLWUT VERSION 6 [columns] [rows]
fn skyline_command(argv: &[&[u8]]) -> Result<Vec<u8>, super::error::CmdError> {
    let [cols, rows] = params(argv, [80, 20], [(1, 1000), (1, 1000)])?;
    let mut canvas = Canvas::new(cols as i32, rows as i32, 3);
    skyline(&mut canvas, &mut rand::thread_rng());
    let mut text = render_grays(&canvas);
    text.extend_from_slice(
        b"\nDedicated to the 8 bit game developers of past and present.\n\
          Original 8 bit image from Plaguemon by hikikomori. Redis ver. ",
    );
    text.extend_from_slice(crate::redis_version().as_bytes());
    text.push(b'\n');
    Ok(text)
}

struct Skyscraper {
    xoff: i32,
    width: i32,
    height: i32,
    windows: bool,
    color: u8,
}

/// One skyscraper standing on the bottom row; its roof is four pixels
/// narrower, its windows (two pixels wide, one tall) a random gray.
fn skyscraper(canvas: &mut Canvas, s: &Skyscraper, rng: &mut impl Rng) {
    let starty = canvas.height - 1;
    let endy = starty - s.height + 1;
    let mut y = starty;
    while y >= endy {
        for x in s.xoff..s.xoff + s.width {
            if y == endy && (x <= s.xoff + 1 || x >= s.xoff + s.width - 2) {
                continue;
            }
            let mut color = s.color;
            if s.windows
                && x > s.xoff + 1
                && x < s.xoff + s.width - 2
                && y > endy + 1
                && y < starty - 1
            {
                let relx = x - (s.xoff + 1);
                let rely = y - (endy + 1);
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = 1 + (crand(rng) % 2) as u8;
                        if color != s.color {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.set(x, y, color);
        }
        y -= 1;
    }
}

/// Two rows of window-less background buildings (lighter behind), then
/// the black foreground with windows, as generateSkyline.
fn skyline(canvas: &mut Canvas, rng: &mut impl Rng) {
    let h = canvas.height;
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += crand(rng) % 8;
            let width = 10 + crand(rng) % 9;
            let height = if color == 2 {
                h / 2 + crand(rng) % h / 2
            } else {
                h / 2 + crand(rng) % h / 3
            };
            let s = Skyscraper {
                xoff: offset,
                width,
                height,
                windows: false,
                color,
            };
            skyscraper(canvas, &s, rng);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += crand(rng) % 8;
        let mut width = 5 + crand(rng) % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + crand(rng) % h / 2;
        let s = Skyscraper {
            xoff: offset,
            width,
            height,
            windows: true,
            color: 0,
        };
        skyscraper(canvas, &s, rng);
        offset += width + 5;
    }
}

/// Each pixel as a space in one of the terminal's four grays (foreground
/// and background both set, as Redis does).
fn render_grays(canvas: &Canvas) -> Vec<u8> {
    let mut text = Vec::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let ce: &[u8] = match canvas.get(x, y) {
                1 => b"0;90;100m",
                2 => b"0;37;47m",
                3 => b"0;97;107m",
                _ => b"0;30;40m",
            };
            text.extend_from_slice(b"\x1b[");
            text.extend_from_slice(ce);
            text.extend_from_slice(b" \x1b[0m");
        }
        if y != canvas.height - 1 {
            text.push(b'\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schotter_has_the_requested_shape() {
        let c = schotter(66, 8, 12, &mut rand::thread_rng());
        assert_eq!((c.width, c.height), (132, 196));
        let text = render_braille(&c);
        // 49 rows of braille, each followed by a newline.
        assert_eq!(std::str::from_utf8(&text).unwrap().split('\n').count(), 50);
    }

    #[test]
    fn one_row_skyline_is_all_white() {
        let mut c = Canvas::new(5, 1, 3);
        skyline(&mut c, &mut rand::thread_rng());
        assert!(c.pixels.iter().all(|&p| p == 3));
    }
}
