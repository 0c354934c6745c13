//! Differential tests: the same commands sent to keel and to a real
//! redis-server 7.0 over raw sockets, replies compared byte for byte.
//!
//! The table uses redis-cli quoting (`SET "a\x00b" "c d"`). A line may
//! start with a marker:
//! - `~` compare after sorting every array of bulk strings (KEYS, SCAN:
//!   their order is unspecified),
//! - `%` compare after sorting the pairs of a map (CONFIG GET: order of
//!   the parameters is unspecified),
//! - `!` run on both, do not compare (sets state whose reply legitimately
//!   differs),
//! - `@` compare with Redis 7.0 only: Redis 7.4 answers otherwise for a
//!   reason docs/compatibility.md gives.
//!
//! The same table runs against keel speaking Redis 7.4.1, compared with
//! the replies of a redis-server 7.4.1 recorded in
//! `data/compat_table_redis74.txt`.
//!
//! Commands whose replies legitimately differ (client ids, times, INFO,
//! CLIENT LIST, commands keel does not implement) are left out.

use std::time::Duration;

use resp::Value;

use crate::eqb;
use crate::harness::*;

const TABLE: &str = r##"
# ---------------------------------------------------------------- PING ECHO
PING
PING hello
PING a b
ping
ECHO
ECHO hi
ECHO ""
ECHO a b
ECHO "\x00\x01\x02\xff\r\n"
RESET x
TIME x
LASTSAVE x
INFO nosuchsection

# ------------------------------------------------------- unknown / arity
NOSUCHCMD
nosuchcmd a b
NOSUCHCMD "a b" ""
FOO xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
FOO aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb cccccccc dddd
""
GET
GET a b
SETNX a
MGET
MSET
STRLEN
INCRBYFLOAT x
GETRANGE x 1
SETRANGE x 1
KEYS
SCAN
DBSIZE x
RANDOMKEY x
FLUSHDB a b
SWAPDB 0
MOVE x
COPY x
RENAME x
RENAMENX x
PERSIST
EXPIRETIME
PEXPIRETIME a b
OBJECT
CONFIG
CLIENT
COMMAND COUNT x
HELLO 3 SETNAME
SELECT
SELECT 0 1

# ---------------------------------------------------------------- SET
FLUSHALL
SET
SET k
SET k v
GET k
SET k v2 NX
GET k
SET k v2 XX
GET k
SET nk v XX
EXISTS nk
SET k v3 GET
SET k2 v GET
GET k2
SET k v NX GET
SET k3 v NX GET
GET k3
SET k v4 XX GET
SET k4 v XX GET
EXISTS k4
SET k v NX XX
SET k v XX NX
SET k v nx nx
SET k v xx xx
SET k v GET GET
SET k v EX 100
TTL k
SET k v EX 100 PX 100
SET k v PX 100 EX 100
SET k v EX 100 EX 200
TTL k
SET k v PX 100000 PX 300000
TTL k
SET k v EXAT 4000000000 EXAT 4000000001
EXPIRETIME k
SET k v EX 100 KEEPTTL
SET k v KEEPTTL EX 100
SET k v KEEPTTL PX 100
SET k v KEEPTTL EXAT 4000000000
SET k v KEEPTTL KEEPTTL
SET k v KEEPTTL
EXPIRETIME k
SET k v EX
SET k v PX
SET k v EXAT
SET k v PXAT
SET k v EX 0
SET k v EX -1
SET k v PX 0
SET k v PX -100
SET k v EX abc
SET k v EX 1.5
SET k v EX ""
SET k v EX 9223372036854775807
SET k v EX 9223372036854775
SET k v EX 9223372036854776
SET k v EX -9223372036854775808
SET k v PX 9223372036854775807
SET k v PX 9223372036854775000
SET k v EXAT 9223372036854775807
SET k v PXAT 9223372036854775807
PEXPIRETIME k
SET k v EXAT 0
SET k v PXAT 0
SET k v PXAT -5
SET k v EXAT 1
EXISTS k
SET k v
SET k v PXAT 1 GET
EXISTS k
SET k v EXAT 4000000000
EXPIRETIME k
PEXPIRETIME k
SET k v PXAT 4000000000123
PEXPIRETIME k
EXPIRETIME k
SET k v PXAT 4000000000500
EXPIRETIME k
SET k v PXAT 4000000000999
EXPIRETIME k
SET k v PXAT 4000000000123
SET k v2 KEEPTTL GET
PEXPIRETIME k
SET k v3 XX KEEPTTL
PEXPIRETIME k
SET k v
PEXPIRETIME k
SET k v PERSIST
SET k v FOO
SET k v EX 10 FOO
SET k v NX FOO
set k v ex 100 nx
set k v Ex 100 Xx Get
TTL k
SET "" ""
GET ""
STRLEN ""
SET k v NX EX 100 GET
SET new v NX EX 100 GET
TTL new

# ------------------------------------------------- GETEX GETDEL GETSET
FLUSHALL
GET missing
SET s hello
GET s
GETEX
GETEX missing
GETEX missing EX 10
GETEX missing FOO
EXISTS missing
GETEX s
TTL s
GETEX s EX 100
TTL s
GETEX s PX 200000
TTL s
GETEX s EXAT 4000000000
EXPIRETIME s
GETEX s PXAT 4000000000555
PEXPIRETIME s
GETEX s PERSIST
TTL s
GETEX s PERSIST
GETEX s EX 10 PX 10
GETEX s EX 10 PERSIST
GETEX s PERSIST EX 10
GETEX s PERSIST PERSIST
GETEX s EX 10 EX 20
TTL s
GETEX s KEEPTTL
GETEX s NX
GETEX s XX
GETEX s GET
GETEX s EX
GETEX s EX 0
GETEX s EX -1
GETEX s PX 0
GETEX s EXAT 0
GETEX s EX abc
GETEX s EX 9223372036854775807
GETEX s PX 9223372036854775807
GETEX s EXAT 1
EXISTS s
GETDEL
GETDEL missing
SET d v
GETDEL d
GETDEL d
EXISTS d
GETDEL d extra
GETSET
GETSET g
GETSET g 1
GETSET g 2
SET g 3 EX 100
GETSET g 4
TTL g
OBJECT ENCODING g
GETSET g 12345678901234567890123456789012345678901234567890
OBJECT ENCODING g

# --------------------------------------------------- SETNX SETEX PSETEX
SETNX
SETNX n
SETNX n 1
SETNX n 2
GET n
SETEX
SETEX e 100
SETEX e 100 v
TTL e
GET e
SETEX e 0 v
SETEX e -10 v
SETEX e abc v
SETEX e 1.5 v
SETEX e 9223372036854775807 v
SETEX e 9223372036854775 v
SETEX e 100 v extra
PSETEX p 100000 v
TTL p
PSETEX p 0 v
PSETEX p -1 v
PSETEX p 9223372036854775807 v
PSETEX p v

# ----------------------------------------------------- MGET MSET MSETNX
FLUSHALL
MGET a
MSET a
MSET a 1 b
MSET a 1 b 2
MGET a b c
MGET c c a
MSET a 1 a 2
GET a
MSETNX
MSETNX a
MSETNX x 1 y
MSETNX x 1 y 2
MSETNX y 3 z 4
MGET x y z
MSETNX p 1 p 2
GET p
SET t v EX 100
MSET t w
TTL t

# -------------------------------------------------------------- counters
FLUSHALL
INCR
INCR a b
INCR c
INCR c
DECR c
DECR d
INCRBY c 10
INCRBY c -10
INCRBY c
INCRBY c abc
INCRBY c 1.0
INCRBY c ""
INCRBY c 9223372036854775808
INCRBY c -9223372036854775809
DECRBY c 5
DECRBY c -5
DECRBY c -9223372036854775808
DECRBY c 9223372036854775807
GET c
SET big 9223372036854775807
INCR big
INCRBY big 0
DECR big
INCR big
INCR big
GET big
SET small -9223372036854775808
DECR small
INCRBY small -1
DECRBY small 1
INCR small
SET s abc
INCR s
SET s ""
INCR s
SET s " 1"
INCR s
SET s "1 "
INCR s
SET s 01
INCR s
SET s +1
INCR s
SET s -0
INCR s
SET s 1.0
INCR s
SET s 12345678901234567890
INCR s
SET s "1\x002"
INCR s
INCRBYFLOAT s 1
SET s "1.5\x00"
INCRBYFLOAT s 1
INCRBYFLOAT s "1\x00"
SET s 1
INCRBYFLOAT s "1\x00"
HSET hnul f "2\x00"
HINCRBYFLOAT hnul f 1
HINCRBYFLOAT hnul g "1\x00"
DEL hnul
SET t 10 EX 100
INCR t
TTL t
OBJECT ENCODING c
SET n 9999
OBJECT REFCOUNT n
INCR n
OBJECT REFCOUNT n
OBJECT ENCODING n
DECR n
OBJECT REFCOUNT n
SET n 10
APPEND n 0
OBJECT ENCODING n
INCR n
OBJECT ENCODING n
GET n

# ---------------------------------------------------------- INCRBYFLOAT
FLUSHALL
INCRBYFLOAT
INCRBYFLOAT f
INCRBYFLOAT f 1
INCRBYFLOAT f 0.5
INCRBYFLOAT f -1.5
INCRBYFLOAT f 10.5
INCRBYFLOAT f 0.1
INCRBYFLOAT g 5.0e3
INCRBYFLOAT g 2.0e2
INCRBYFLOAT g 1e-5
INCRBYFLOAT h 1.5e-7
INCRBYFLOAT h -1.5e-7
INCRBYFLOAT r 3.0
INCRBYFLOAT r -3
INCRBYFLOAT neg -0.0
INCRBYFLOAT dot .5
INCRBYFLOAT dot 5.
INCRBYFLOAT dot +1
INCRBYFLOAT huge 1e20
INCRBYFLOAT p 0.1
INCRBYFLOAT p 0.2
INCRBYFLOAT q 1.1
INCRBYFLOAT q 2.2
INCRBYFLOAT big 1e17
INCRBYFLOAT big 1
INCRBYFLOAT pi 3.14159265358979323846
INCRBYFLOAT f abc
INCRBYFLOAT f ""
INCRBYFLOAT f " 1"
INCRBYFLOAT f "1 "
INCRBYFLOAT f nan
INCRBYFLOAT f inf
INCRBYFLOAT f -inf
INCRBYFLOAT f infinity
INCRBYFLOAT f 1e
INCRBYFLOAT f 0x10
INCRBYFLOAT f 1,5
GET f
SET s abc
INCRBYFLOAT s 1
SET s 1e3
INCRBYFLOAT s 1
SET s " 5"
INCRBYFLOAT s 1
SET s 5
INCRBYFLOAT s 1.25
SET t 1 EX 100
INCRBYFLOAT t 1
TTL t
OBJECT ENCODING f
OBJECT ENCODING t

# ------------------------------------------------------- APPEND STRLEN
FLUSHALL
APPEND
APPEND a
APPEND a abc
APPEND a def
GET a
STRLEN a
OBJECT ENCODING a
SET n 12
APPEND n 34
GET n
OBJECT ENCODING n
STRLEN n
SET n 12345
STRLEN n
SET n -12
STRLEN n
STRLEN missing
STRLEN a b
APPEND e ""
EXISTS e
GET e
STRLEN e
APPEND newint 123
OBJECT ENCODING newint
APPEND newstr hello
OBJECT ENCODING newstr
APPEND newstr x
OBJECT ENCODING newstr
SET t x EX 100
APPEND t y
TTL t
GET t

# ------------------------------------------------------ GETRANGE SUBSTR
FLUSHALL
SET s "This is a string"
GETRANGE s 0 3
GETRANGE s -3 -1
GETRANGE s 0 -1
GETRANGE s 10 100
GETRANGE s 5 3
GETRANGE s -1 -5
GETRANGE s -100 -50
GETRANGE s -100 2
GETRANGE s 100 200
GETRANGE s -1 -1
GETRANGE s 0 0
GETRANGE s 15 15
GETRANGE s 16 16
GETRANGE s -16 -16
GETRANGE s -17 -17
GETRANGE s 9223372036854775807 9223372036854775807
GETRANGE s -9223372036854775808 9223372036854775807
GETRANGE s 0 -9223372036854775808
GETRANGE missing 0 -1
GETRANGE missing 5 3
GETRANGE s a 1
GETRANGE s 0 b
GETRANGE s 0 1 2
SUBSTR s 0 3
SUBSTR s -6 -1
SUBSTR s
SET n 12345
GETRANGE n 1 2
GETRANGE n -2 -1
SET e ""
GETRANGE e 0 -1
GETRANGE e 0 0
GETRANGE e -1 0

# ------------------------------------------------------------- SETRANGE
FLUSHALL
SET h "Hello World"
SETRANGE h 6 Redis
GET h
SETRANGE h 20 "!"
GET h
STRLEN h
SETRANGE pad 3 x
GET pad
SETRANGE h -1 x
SETRANGE h abc x
SETRANGE h 1.5 x
SETRANGE empty 0 ""
EXISTS empty
SETRANGE empty 10 ""
EXISTS empty
SETRANGE h 100 ""
SETRANGE h 0 ""
SETRANGE h 536870912 x
SETRANGE newbig 536870912 x
SETRANGE h 9223372036854775807 x
SETRANGE h 536870912 ""
SET n 12345
SETRANGE n 0 9
GET n
OBJECT ENCODING n
OBJECT ENCODING h
OBJECT ENCODING pad
SETRANGE
SETRANGE h 0
SET t abc EX 100
SETRANGE t 1 x
TTL t

# ---------------------------------------------- DEL EXISTS TOUCH TYPE
FLUSHALL
MSET a 1 b 2 c 3
DEL a b missing
DEL a
DEL
EXISTS a b c c
EXISTS
UNLINK c missing
UNLINK
TOUCH
MSET a 1 b 2
TOUCH a a b missing
TYPE a
TYPE missing
TYPE
TYPE a b
DBSIZE

# --------------------------------------------------------------- EXPIRE
FLUSHALL
EXPIRE missing 10
PEXPIRE missing 10
EXPIREAT missing 4000000000
PEXPIREAT missing 4000000000000
TTL missing
PTTL missing
EXPIRETIME missing
PEXPIRETIME missing
PERSIST missing
SET k v
TTL k
PTTL k
EXPIRETIME k
PEXPIRETIME k
PERSIST k
EXPIRE k 100 XX
EXPIRE k 100 GT
TTL k
EXPIRE k 100 LT
TTL k
EXPIRE k 100 NX
EXPIRE k 200 XX
TTL k
EXPIRE k 100 GT
EXPIRE k 300 GT
EXPIRE k 400 LT
EXPIRE k 50 LT
TTL k
# Not 50: a millisecond passing between the two commands would make 50 "greater".
EXPIRE k 49 GT
EXPIRE k 50 LT
EXPIRE k 60 xx gt
TTL k
EXPIRE k 10 NX XX
EXPIRE k 10 XX NX
EXPIRE k 10 NX GT
EXPIRE k 10 NX LT
EXPIRE k 10 GT LT
EXPIRE k 10 LT GT
EXPIRE k 10 NX NX
EXPIRE k 10 FOO
EXPIRE k 10 NX FOO
EXPIRE k 10 FOO NX
EXPIRE k abc
EXPIRE k abc FOO
EXPIRE k abc NX XX
EXPIRE k 1.5
EXPIRE k
EXPIRE
EXPIRE k 9223372036854775807
EXPIRE k -9223372036854775808
EXPIRE k 9223372036854775
PEXPIRE k 9223372036854775807
EXPIREAT k 9223372036854775807
PEXPIREAT k 9223372036854775807
PEXPIRETIME k
EXPIREAT k 4000000000
EXPIRETIME k
PEXPIRETIME k
PEXPIREAT k 4000000000123
PEXPIRETIME k
EXPIRETIME k
PEXPIREAT k 4000000000124 NX
PEXPIREAT k 4000000000124 GT
PEXPIREAT k 4000000000000 GT
PEXPIREAT k 4000000000000 LT
PEXPIRETIME k
PERSIST k
PERSIST k
TTL k
PEXPIRE k -9223372036854775808
EXISTS k
SET k v
EXPIRE k 0
EXISTS k
SET k v
EXPIRE k -1
EXISTS k
SET k v
PEXPIRE k -100
EXISTS k
SET k v
EXPIREAT k 1
EXISTS k
SET k v
PEXPIREAT k 0
EXISTS k
SET k v EX 100
EXPIRE k -1 GT
EXISTS k
EXPIRE k -1 LT
EXISTS k
SET k v
EXPIRE k -1 XX
EXISTS k
EXPIRE k -1 NX
EXISTS k
TTL
TTL a b
PTTL
PERSIST
PERSIST a b

# ---------------------------------------------- RENAME COPY MOVE
FLUSHALL
RENAME missing x
RENAMENX missing x
RENAME
SET a 1 EX 100
RENAME a b
EXISTS a
GET b
TTL b
RENAME b b
RENAMENX b b
RENAME missing missing
RENAMENX missing missing
SET c 3
RENAMENX b c
GET c
RENAMENX b d
TTL d
RENAME c d
GET d
TTL d
RENAME d "new\x00key"
GET "new\x00key"
SET src v EX 100
COPY
COPY src
COPY src dst
GET dst
TTL dst
COPY src dst
SET src w
COPY src dst REPLACE
GET dst
TTL dst
COPY src src
COPY src src DB 0
COPY src src REPLACE
COPY missing x
COPY missing missing
COPY missing missing DB 0
COPY src dst DB 1
COPY src dst DB 1
COPY src dst DB 1 REPLACE
COPY src src DB 1 REPLACE
COPY src dst DB 16
COPY src dst DB -1
COPY src dst DB abc
COPY src dst DB 99999999999
COPY src dst FOO
COPY src dst DB
COPY src dst REPLACE REPLACE
COPY src dst DB 1 DB 2
COPY src dst REPLACE DB
SET i 123
COPY i i2
OBJECT ENCODING i2
OBJECT REFCOUNT i2
SELECT 1
MGET dst src
SELECT 2
MGET dst src
SELECT 0
SET m v EX 100
MOVE
MOVE m
MOVE m 3
EXISTS m
MOVE m 3
SET m other
MOVE m 3
GET m
MOVE m 0
MOVE m 16
MOVE m -1
MOVE m abc
MOVE m 99999999999
MOVE missing 0
MOVE missing 3
SELECT 3
GET m
TTL m
SELECT 0

# ---------------------------------------------------------------- KEYS
FLUSHALL
MSET hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 h[a]llo 6 h*llo 7 other 8 "h\\llo" 9 "h\x00llo" 10
~KEYS *
~KEYS h?llo
~KEYS h*llo
~KEYS h[ae]llo
~KEYS h[^e]llo
~KEYS h[a-f]llo
~KEYS h[f-a]llo
~KEYS "h\\[a\\]llo"
~KEYS "h\\*llo"
~KEYS "h\\\\llo"
~KEYS "h\\?llo"
~KEYS h[a
~KEYS h[
~KEYS "h\\"
~KEYS *llo*
~KEYS ?????
~KEYS nomatch
~KEYS [
~KEYS H*
~KEYS "h\x00*"
~KEYS **o
~KEYS h[!a]llo
KEYS a b

# ---------------------------------------------------------------- SCAN
FLUSHALL
~SCAN 0
MSET s1 1 s2 2 s3 3 x1 4
~SCAN 0 COUNT 1000
~SCAN 0 MATCH s* COUNT 1000
~SCAN 0 MATCH "*" COUNT 1000
~SCAN 0 TYPE string COUNT 1000
~SCAN 0 TYPE list COUNT 1000
~SCAN 0 TYPE STRING COUNT 1000
~SCAN 0 TYPE nosuchtype COUNT 1000
~SCAN 0 MATCH s* TYPE string COUNT 1000
~SCAN +0 COUNT 1000
~SCAN 0 count 1000 match x*
SCAN abc
SCAN 1.5
~SCAN " 0"
SCAN 18446744073709551616
SCAN 0 COUNT 0
SCAN 0 COUNT -1
SCAN 0 COUNT abc
SCAN 0 FOO bar
SCAN 0 MATCH
SCAN 0 COUNT
SCAN 0 TYPE
SCAN 0 MATCH a b

# ------------------------------------------------ RANDOMKEY DBSIZE FLUSH
FLUSHALL
RANDOMKEY
DBSIZE
SET only v
RANDOMKEY
DBSIZE
FLUSHDB FOO
FLUSHDB ASYNC SYNC
FLUSHALL FOO
FLUSHALL ASYNC FOO
FLUSHDB async
DBSIZE
SET only v
FLUSHALL sync
DBSIZE
SET only v
FLUSHALL ASYNC
DBSIZE

# -------------------------------------------------------------- SELECT
FLUSHALL
SELECT 15
SET in15 v
SELECT 16
SELECT -1
SELECT abc
SELECT 1.5
SELECT 99999999999
SELECT ""
GET in15
SELECT 0
GET in15

# -------------------------------------------------------------- SWAPDB
FLUSHALL
SET k db0
SELECT 1
SET k db1
SET k1 x
SWAPDB 0 1
GET k
DBSIZE
SELECT 0
GET k
DBSIZE
SWAPDB 0 0
SWAPDB 1 0
GET k
SWAPDB 0 16
SWAPDB 16 0
SWAPDB -1 0
SWAPDB a 1
SWAPDB 0 b
SWAPDB a b
SWAPDB 99999999999 0
SWAPDB 0 99999999999
SWAPDB 0 1.5
SWAPDB

# -------------------------------------------------------------- OBJECT
FLUSHALL
MSET i 123 big 12345678901234567890 neg -5 e hello f 1.5 z 0123 sp " 1" min -9223372036854775808 zz 00 i9999 9999 i10000 10000
SET r xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
SET m yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy
OBJECT ENCODING i
OBJECT ENCODING big
OBJECT ENCODING neg
OBJECT ENCODING e
OBJECT ENCODING f
OBJECT ENCODING z
OBJECT ENCODING sp
OBJECT ENCODING min
OBJECT ENCODING zz
OBJECT ENCODING r
OBJECT ENCODING m
OBJECT ENCODING missing
object encoding i
OBJECT REFCOUNT i
OBJECT REFCOUNT i9999
OBJECT REFCOUNT i10000
OBJECT REFCOUNT neg
OBJECT REFCOUNT e
OBJECT REFCOUNT r
OBJECT REFCOUNT missing
!OBJECT IDLETIME e
OBJECT IDLETIME missing
OBJECT FREQ e
OBJECT FREQ missing
OBJECT FOO
OBJECT FOO bar
OBJECT ENCODING
OBJECT ENCODING a b
OBJECT REFCOUNT
OBJECT HELP
OBJECT help
OBJECT HELP extra
SETNX sn 42
OBJECT ENCODING sn
SETEX se 100 42
OBJECT ENCODING se
SET s 5
APPEND s 6
OBJECT ENCODING s
SET s 5
SETRANGE s 0 7
OBJECT ENCODING s
SET s abc
SETRANGE s 1 b
OBJECT ENCODING s
INCRBYFLOAT y 1.5
OBJECT ENCODING y
GETSET s 100
OBJECT ENCODING s
RENAME i i3
OBJECT REFCOUNT i3

# -------------------------------------------------------------- CONFIG
%CONFIG GET timeout
%CONFIG GET hz timeout
%CONFIG GET nosuch
CONFIG GET
%CONFIG GET databases
%CONFIG GET TIMEOUT
%CONFIG GET save
%CONFIG GET appendonly
%CONFIG GET appendfsync
%CONFIG GET maxclients
%CONFIG GET tcp-keepalive
%CONFIG GET tcp-backlog
%CONFIG GET proto-max-bulk-len
%CONFIG GET loglevel
%CONFIG GET protected-mode
%CONFIG GET daemonize
%CONFIG GET dbfilename
%CONFIG GET hash-max-listpack-entries
%CONFIG GET hash-max-ziplist-entries
%CONFIG GET *-max-listpack-*
%CONFIG GET *ziplist*
%CONFIG GET list-compress-depth
%CONFIG GET set-max-intset-entries
%CONFIG GET unixsocket
%CONFIG GET unixsocketperm
%CONFIG GET enable-debug-command
%CONFIG GET hz hz
CONFIG SET hz 20
%CONFIG GET hz
CONFIG SET hz 0
%CONFIG GET hz
CONFIG SET hz 501
%CONFIG GET hz
CONFIG SET hz abc
CONFIG SET hz -1
CONFIG SET hz 10
CONFIG SET timeout 30 tcp-keepalive 60
%CONFIG GET timeout tcp-keepalive
CONFIG SET timeout -1
CONFIG SET timeout abc
CONFIG SET timeout 5 timeout 6
CONFIG SET timeout 5 TIMEOUT 6
CONFIG SET timeout 40 hz abc
%CONFIG GET timeout
CONFIG SET timeout 0
CONFIG SET tcp-keepalive 300
CONFIG SET nosuch 1
CONFIG SET databases 3
CONFIG SET daemonize no
CONFIG SET unixsocket /tmp/x
CONFIG SET tcp-backlog 100
CONFIG SET protected-mode maybe
CONFIG SET protected-mode no
%CONFIG GET protected-mode
CONFIG SET protected-mode YES
%CONFIG GET protected-mode
CONFIG SET loglevel WARNING
%CONFIG GET loglevel
CONFIG SET loglevel loud
CONFIG SET loglevel notice
CONFIG SET proto-max-bulk-len 2mb
%CONFIG GET proto-max-bulk-len
CONFIG SET proto-max-bulk-len 1k
CONFIG SET proto-max-bulk-len abc
CONFIG SET proto-max-bulk-len 512mb
%CONFIG GET proto-max-bulk-len
CONFIG SET maxclients 0
CONFIG SET maxclients abc
CONFIG SET maxmemory 18446744073709551615
CONFIG GET maxmemory
CONFIG SET maxmemory 18446744073709551616
CONFIG GET maxmemory
CONFIG SET maxmemory 99999999999999999999gb
CONFIG SET maxmemory -1
CONFIG SET maxmemory 0
CONFIG SET hash-max-listpack-entries 100
%CONFIG GET hash-max-ziplist-entries
CONFIG SET hash-max-ziplist-entries 512
%CONFIG GET hash-max-listpack-entries
CONFIG SET hash-max-listpack-entries -1
CONFIG SET list-max-listpack-size -6
CONFIG SET list-max-listpack-size -2
CONFIG SET appendfsync sometimes
CONFIG SET appendfsync always
%CONFIG GET appendfsync
CONFIG SET appendfsync everysec
CONFIG SET save "100 10"
%CONFIG GET save
CONFIG SET save "100"
CONFIG SET save "a b"
CONFIG SET save "100 -1"
CONFIG SET save ""
%CONFIG GET save
CONFIG SET appendonly no
CONFIG SET
CONFIG SET hz
CONFIG SET hz 10 timeout
CONFIG REWRITE
CONFIG REWRITE x
CONFIG RESETSTAT x
CONFIG HELP
CONFIG help
CONFIG FOO
CONFIG GET timeout extra-pattern-that-matches-nothing

# ------------------------------------------------------------- COMMAND
COMMAND FOO
COMMAND HELP
COMMAND INFO nosuchcmd
COMMAND DOCS nosuchcmd
COMMAND INFO get set
COMMAND INFO GET
COMMAND INFO client|kill
COMMAND INFO get nosuchcmd ttl
COMMAND DOCS get
COMMAND DOCS GET
COMMAND DOCS set
COMMAND DOCS client|kill
COMMAND GETKEYS
COMMAND GETKEYS SET a b
COMMAND GETKEYS GET a
COMMAND GETKEYS get A
COMMAND GETKEYS MSET a 1 b 2
COMMAND GETKEYS MGET a b c
COMMAND GETKEYS DEL a b
COMMAND GETKEYS EXISTS a a
COMMAND GETKEYS COPY a b
COMMAND GETKEYS COPY a b DB 1 REPLACE
COMMAND GETKEYS RENAME a b
COMMAND GETKEYS EXPIRE a 10
COMMAND GETKEYS OBJECT ENCODING k
COMMAND GETKEYS SET a b EX 10
COMMAND GETKEYS PING
COMMAND GETKEYS PING a b c
COMMAND GETKEYS NOSUCH a
COMMAND GETKEYS GET
COMMAND GETKEYS GET a b
COMMAND GETKEYS MSET a
COMMAND GETKEYS CONFIG GET x
COMMAND GETKEYSANDFLAGS SET a b
COMMAND GETKEYSANDFLAGS GET a
COMMAND GETKEYSANDFLAGS DEL a b
COMMAND GETKEYSANDFLAGS MSET a 1 b 2
COMMAND GETKEYSANDFLAGS COPY a b
COMMAND GETKEYSANDFLAGS RENAME a b
COMMAND GETKEYSANDFLAGS GETDEL a
COMMAND GETKEYSANDFLAGS EXPIRE a 1
COMMAND GETKEYSANDFLAGS PING
COMMAND GETKEYSANDFLAGS
COMMAND LIST FILTERBY PATTERN get
COMMAND LIST FILTERBY PATTERN GET
~COMMAND LIST FILTERBY PATTERN [ep]*expire*
~COMMAND LIST FILTERBY PATTERN object*
COMMAND LIST FILTERBY FOO bar
COMMAND LIST FILTERBY
COMMAND LIST FILTERBY PATTERN
COMMAND LIST FILTERBY MODULE foo
COMMAND LIST FOO
COMMAND LIST FILTERBY PATTERN a b
~COMMAND LIST FILTERBY ACLCAT string
~COMMAND LIST FILTERBY ACLCAT STREAM
~COMMAND LIST FILTERBY aclcat hyperloglog
COMMAND LIST FILTERBY ACLCAT nosuchcat
COMMAND LIST FILTERBY ACLCAT @string
COMMAND LIST FILTERBY ACLCAT ""
~COMMAND LIST FILTERBY PATTERN config|*
~COMMAND LIST FILTERBY PATTERN CONFIG|GET
~COMMAND LIST FILTERBY PATTERN xinfo|*
~COMMAND LIST FILTERBY PATTERN [sz]add
~COMMAND LIST FILTERBY PATTERN h?et
~COMMAND LIST FILTERBY PATTERN *store
COMMAND LIST FILTERBY PATTERN nosuch*
COMMAND LIST FILTERBY MODULE nosuchmodule
COMMAND LIST FILTERBY PATTERN a FILTERBY ACLCAT string
COMMAND LIST FILTERBY ACLCAT
COMMAND GETKEYS SORT k
COMMAND GETKEYS SORT k STORE d
COMMAND GETKEYS SORT k store d
COMMAND GETKEYS SORT k STORE
COMMAND GETKEYS SORT k STORE a STORE b
COMMAND GETKEYS SORT k BY x GET y LIMIT 0 1 STORE d
COMMAND GETKEYS SORT k LIMIT STORE x STORE d
COMMAND GETKEYS SORT k GET STORE STORE d
COMMAND GETKEYS SORT k ALPHA DESC STORE d ASC
COMMAND GETKEYS SORT
COMMAND GETKEYS SORT_RO k
COMMAND GETKEYS SORT_RO k STORE d
COMMAND GETKEYSANDFLAGS SORT k
COMMAND GETKEYSANDFLAGS SORT k STORE d
COMMAND GETKEYSANDFLAGS SORT k LIMIT 0 1 GET # STORE d BY x
COMMAND GETKEYSANDFLAGS SORT_RO k STORE d
COMMAND GETKEYS MIGRATE host 1 "" 0 5000 KEYS k1 k2
COMMAND GETKEYSANDFLAGS MIGRATE host 1 "" 0 5000 COPY AUTH2 a b KEYS k1 k2
COMMAND GETKEYSANDFLAGS MIGRATE host 1 k 0 5000
COMMAND GETKEYS MIGRATE host 1 k 0 5000 KEYS a b
COMMAND GETKEYS MIGRATE host 1 "" 0 5000 AUTH KEYS KEYS k1
COMMAND GETKEYS MIGRATE host 1 "" 0 5000 KEYS
COMMAND GETKEYS MIGRATE host 1 "" 0 5000

# ---------------------------------------------------------------- LOLWUT
# Only drawings that take no random numbers compare: Schotter with at
# most two rows of squares, a one-row skyline, and the version line.
LOLWUT
lolwut
LOLWUT 5
LOLWUT foo bar
LOLWUT VERSION
LOLWUT VERSION 7
LOLWUT version 4
LOLWUT VERSION -1
LOLWUT VERSION 4294967302 7 1
LOLWUT VERSION 4294967301 20 3 2
LOLWUT VERSION abc
LOLWUT VERSION 5 abc
LOLWUT VERSION 5 10 x
LOLWUT VERSION 6 x
LOLWUT VERSION 5 66 8 2
LOLWUT VERSION 5 66 8 1
LOLWUT VERSION 5 1 1 1
LOLWUT VERSION 5 0 0 0
LOLWUT VERSION 5 2 1 1
LOLWUT VERSION 5 3 2 2
LOLWUT VERSION 5 37 7 2
LOLWUT VERSION 5 100 13 2
LOLWUT VERSION 5 5000 300 2
LOLWUT VERSION 6 1 1
LOLWUT VERSION 6 30 1
LOLWUT VERSION 6 -5 0
LOLWUT VERSION 6 5000 1

# ------------------------------------------------ SCRIPT FUNCTION KILL
SCRIPT KILL
script kill
FUNCTION KILL
function kill
SCRIPT KILL x
FUNCTION KILL x

# -------------------------------------------------------------- CLIENT
CLIENT FOO
CLIENT ID x
CLIENT SETNAME
CLIENT SETNAME "a b"
CLIENT SETNAME "a\nb"
CLIENT SETNAME "caf\xc3\xa9"
CLIENT SETNAME ok-name
CLIENT GETNAME
CLIENT SETNAME ""
CLIENT GETNAME
CLIENT GETNAME x
CLIENT SETNAME a b
CLIENT LIST TYPE foo
CLIENT LIST ID abc
CLIENT LIST ID 0
CLIENT LIST ID -5
CLIENT LIST ID
CLIENT LIST FOO
CLIENT LIST FOO bar
CLIENT LIST TYPE master
CLIENT LIST TYPE replica
CLIENT LIST TYPE slave
CLIENT LIST TYPE pubsub
CLIENT LIST ID 999999
CLIENT LIST ID 999999 999998
CLIENT KILL 1.2.3.4:5
CLIENT KILL ID 999999
CLIENT KILL ID abc
CLIENT KILL ID 0
CLIENT KILL ID -1
CLIENT KILL ID
CLIENT KILL FOO bar
CLIENT KILL TYPE foo
CLIENT KILL TYPE master
CLIENT KILL TYPE pubsub
CLIENT KILL TYPE replica
CLIENT KILL USER nobody
CLIENT KILL USER default ID 999999
CLIENT KILL SKIPME maybe
CLIENT KILL ADDR 1.2.3.4:5
CLIENT KILL LADDR 1.2.3.4:5
CLIENT KILL ID 1 SKIPME
CLIENT KILL ADDR 1.2.3.4:5 ID 999999 TYPE normal SKIPME yes
CLIENT NO-EVICT maybe
CLIENT NO-EVICT on
CLIENT NO-EVICT OFF
CLIENT NO-EVICT
CLIENT NO-EVICT on off
CLIENT REPLY FOO
CLIENT REPLY ON
CLIENT REPLY
CLIENT REPLY ON OFF
CLIENT INFO x
CLIENT LIST TYPE

# --------------------------------------------------------------- HELLO
HELLO 4
HELLO 1
HELLO 0
HELLO -1
HELLO abc
HELLO 1.5
HELLO 99999999999999999999
HELLO 3 FOO
HELLO 3 AUTH
HELLO 3 AUTH default
HELLO 2 AUTH nobody pw
HELLO 3 SETNAME "a b"
HELLO 3 AUTH nobody pw SETNAME "a b"
HELLO 3 SETNAME x FOO
HELLO 4 FOO
GET missing

# --------------------------------------------------------------- AUTH ACL
# (`!`: Redis orders single commands in a rule description by its hash
# table, randomly seeded; acl.rs compares those with the order ignored.)
AUTH
AUTH pw
AUTH a b c
AUTH nobody pw
AUTH default anything
ACL
ACL FOO
ACL WHOAMI
ACL WHOAMI x
ACL USERS
ACL LIST
ACL GETUSER default
ACL GETUSER nobody
ACL SETUSER
ACL SETUSER "a b"
ACL SETUSER dt1
ACL GETUSER dt1
ACL SETUSER dt1 on >p1 >p2 <p1 ~cache:* %R~ro:* %W~wo:* %RW~rw:* &news.* +get +set -@all +@read -@dangerous +config|get +select|0
!ACL GETUSER dt1
ACL SETUSER dt1 bogus
ACL SETUSER dt1 +nocmd
ACL SETUSER dt1 +@nocat
ACL SETUSER dt1 %X~x
ACL SETUSER dt1 #abc
ACL SETUSER dt1 #ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789
ACL SETUSER dt1 !0000000000000000000000000000000000000000000000000000000000000000
ACL SETUSER dt1 <never
ACL SETUSER dt1 allkeys ~x
ACL SETUSER dt1 allchannels &x
ACL SETUSER dt1 +select|0|1
ACL SETUSER dt1 +config|get|x
ACL SETUSER dt1 +config|
ACL SETUSER dt1 (+get ~y
ACL SETUSER dt1 (+get ~sel1) (+set ~sel2 &c)
ACL SETUSER dt1 "(+hset" "~sel3)"
!ACL GETUSER dt1
!ACL LIST
ACL SETUSER dt1 clearselectors resetkeys resetchannels nopass
!ACL GETUSER dt1
ACL SETUSER dt1 reset
ACL GETUSER dt1
ACL SETUSER dt2 on nopass +@all -@dangerous ~*
!ACL GETUSER dt2
ACL SETUSER dt2 -@all +@hash +@list -lpush +client|id allkeys allchannels
!ACL GETUSER dt2
ACL SETUSER dt2 +@all -flushall -flushdb -keys -debug
!ACL GETUSER dt2
ACL DRYRUN nobody get x
ACL DRYRUN dt2 nocmd x
ACL DRYRUN dt2 flushall
ACL DRYRUN dt2 get x
ACL SETUSER dt3 on nopass -@all +get +set +publish +subscribe +psubscribe %R~r* ~rw* &ch1 &ch*
ACL DRYRUN dt3 get r1
ACL DRYRUN dt3 set r1 v
ACL DRYRUN dt3 set rw1 v
ACL DRYRUN dt3 get other
ACL DRYRUN dt3 publish ch1 m
ACL DRYRUN dt3 publish other m
ACL DRYRUN dt3 psubscribe ch*
ACL DRYRUN dt3 psubscribe ch1*
ACL DRYRUN dt3 del r1
ACL DRYRUN dt3 get
ACL DRYRUN dt3 set r1
ACL DRYRUN dt3 config
ACL DRYRUN dt3 config nosuch
ACL DRYRUN dt3 migrate h 1 r1 0 10
ACL DRYRUN dt3 migrate h 1 "" 0 10 KEYS r1 other
ACL DRYRUN dt3 migrate h 1 "" 0 10 KEYS r1 rw2
ACL CAT
~ACL CAT geo
~ACL CAT admin
ACL CAT nocat
ACL CAT @read
ACL GENPASS 0
ACL GENPASS 4097
ACL GENPASS abc
ACL LOG abc
ACL LOG RESET
ACL LOG RESET extra
ACL log reset extra
ACL LOG 1 2
ACL LOG
ACL SAVE
ACL LOAD
ACL DELUSER default
ACL DELUSER dt1 dt2 nobody
ACL DELUSER dt3
ACL USERS
AUTH default anything
AUTH dt3 x
ACL SETUSER dt4 on >pw ~k* +@all
AUTH dt4 wrong
AUTH dt4 pw
ACL WHOAMI
GET k1
GET other
SET other v
~KEYS *
MULTI
GET other
EXEC
ACL DELUSER dt4
PING
ACL WHOAMI
CLIENT KILL USER dt4
CONFIG SET requirepass secret
GET k1
PING
AUTH wrong
AUTH secret
CONFIG GET requirepass
CONFIG SET requirepass ""
AUTH x
%CONFIG GET acl*
CONFIG SET acllog-max-len -1
CONFIG SET acl-pubsub-default foo

# --------------------------------------------------------------- DEBUG
DEBUG SLEEP 0
DEBUG SLEEP 0.01
DEBUG sleep 0
DEBUG SLEEP abc
DEBUG FOO
DEBUG SLEEP
DEBUG SLEEP 0 1
SHUTDOWN FOO
SHUTDOWN ABORT
SHUTDOWN NOW ABORT

# ---------------------------------------------------------------- SORT
flushall
rpush nums 3 10 1 -2 2.5 10
sort nums
sort nums desc
sort nums limit 1 2
sort nums limit 0 0
sort nums limit -5 2
sort nums limit 4 100
sort nums limit 100 2
sort nums desc limit 1 -1
sort nums alpha
sort nums alpha desc
rpush words banana apple cherry 10 9
sort words
sort words alpha
sort words alpha limit 1 2 desc
sort nosuchkey
sort nosuchkey alpha limit 0 10
mset w_3 30 w_10 5 w_1 1 w_-2 100 w_2.5 7
sort nums by w_*
sort nums by w_* desc
sort nums by nokey_*
sort nums by w_* get # get w_*
sort nums by nosort
sort nums by nosort desc
sort nums by nosort limit 1 2
sort nums by nosort desc limit 1 2
sort nums by nosort get w_* get #
sort nums get nothere_*
sort nums get fixedkey
hset o_3 name three rank 3
hset o_1 name one rank 1
hset o_10 name ten rank 10
sort nums by o_*->rank get o_*->name get #
sort nums by o_*->rank alpha get o_*->name
sort nums get o_*->
sort nums get o_*->nofield
sadd s 5 3 9 1
sort s
sort s desc limit 0 2
sort s by nosort store dst
lrange dst 0 -1
sadd ws b a c
sort ws alpha
sort ws by nosort store dst
lrange dst 0 -1
zadd z 3 c 1 a 2 b 10 j
sort z alpha
sort z by nosort
sort z by nosort desc
sort z by nosort limit 1 2
sort z by nosort desc limit 1 2
sort nums store dst
lrange dst 0 -1
type dst
sort nums get w_* get nothere_* store dst
lrange dst 0 -1
sort nosuchkey store dst
exists dst
sort nums limit 0 0 store dst
sort words
sort nums alpha store dst
lrange dst 0 -1
set str x
sort str
sort str alpha limit
hset hh a 1
sort hh
sort nums limit
sort nums limit 1
sort nums limit a 1
sort nums by
sort nums get
sort nums store
sort nums bogus
sort nums asc desc
sort
sort_ro nums
sort_ro nums desc limit 0 3 alpha
sort_ro nums store dst
sort_ro nums by w_* get #
rpush badnum 1 x 2
sort badnum
sort badnum alpha
rpush inf inf -inf 0 1e3
sort inf
set w_x notnum
sadd ss x y
sort ss by w_*
FLUSHALL

# ----------------------------------- strings and keys vs other types
FLUSHALL
RPUSH l a b c
SADD s x y
ZADD z 1 m
SET str v
TYPE l
TYPE s
TYPE z
TYPE str
GET l
SET l v GET
SET l v NX GET
SET l v XX GET
SET l v NX
GETEX l
GETEX l EX 100
GETDEL l
GETSET l v
APPEND l x
STRLEN l
INCR l
DECR l
INCRBY l 1
DECRBY l 1
INCRBYFLOAT l 1
GETRANGE l 0 -1
SUBSTR l 0 -1
SETRANGE l 0 x
SETRANGE l 0 ""
MGET l str s
SETNX l v
MSETNX l v new v
EXISTS new
~SCAN 0 TYPE list COUNT 1000
~SCAN 0 TYPE zset COUNT 1000
~SCAN 0 TYPE set COUNT 1000
~SCAN 0 TYPE string COUNT 1000
~SCAN 0 TYPE hash COUNT 1000
~KEYS *
OBJECT ENCODING l
OBJECT ENCODING s
OBJECT ENCODING z
OBJECT REFCOUNT l
COPY l l2
TYPE l2
LRANGE l2 0 -1
RENAME l l3
TYPE l3
EXPIRE l3 100
TTL l3
MOVE l3 1
SELECT 1
TYPE l3
TTL l3
SELECT 0
SET s plain
TYPE s
GET s
MSET z 1
TYPE z
DEL l2 s z str
DBSIZE

# ------------------------------------------------------ binary safety
FLUSHALL
SET "a\x00b" "c\r\nd\x00"
GET "a\x00b"
STRLEN "a\x00b"
APPEND "a\x00b" "\x00"
GETRANGE "a\x00b" 0 -1
GETRANGE "a\x00b" 1 3
~KEYS *
EXISTS "a\x00b" "a"
SET "\r\n" "\r\n"
GET "\r\n"
MGET "\r\n" "a\x00b"
SET "\xff\xfe" "\x80"
GET "\xff\xfe"
RENAME "\xff\xfe" "\x00"
GET "\x00"
TYPE "\x00"
DEL "\x00" "\r\n" "a\x00b"
DBSIZE

# ------------------------------------------------------------- sets
flushall
sadd s 1 2 3 a
set str x
spop s 1 2
spop s x
srandmember s x
srandmember s 1 2
srem s 2 2 a
scard str
scard nokey
sintercard 2 s nokey limit 0
sintercard 1 s LIMIT 1
sintercard 1 s limit 1 limit 2
sintercard 1 str
sintercard 2 nokey str
sintercard 0 a
sintercard 2 a
sintercard 1 s limit -1
sintercard 1 s limit
sadd i 1 2 3
sunionstore u i
object encoding u
sinterstore u2 i s
object encoding u2
~smembers u2
sscan s 0 count 0
sscan s 0 match
sscan i 0 match 1* count 1
sscan i 0 count 1 count 2
sscan i -1
sscan i x
sscan nokey 0 count 0
smove s s 1
smove s s 99
smove s str 1
smove str s 1
smove s nokey 1
smove s d2 1
~smembers d2
~sdiff i d2
sdiffstore d3 i nokey
~smembers d3
~sinter i nokey
~sinter nokey str
~sunion i d2 nokey
sinterstore i2 nokey
exists i2
smismember i 1 x
spop nokey 2
spop nokey
srandmember nokey 3
srandmember nokey
srandmember i -9223372036854775808
srandmember i 0
srandmember i 10
spop i 0
spop i 10
exists i
FLUSHALL
CONFIG SET set-max-intset-entries 3
SADD big 1 2 3
OBJECT ENCODING big
SADD big 4
OBJECT ENCODING big
~SMEMBERS big
SADD big x
~SSCAN big 0 COUNT 100
~SSCAN big "" COUNT 100
SSCAN big -
SSCAN big 0 COUNT 0
SSCAN big 0 MATCH
SSCAN big 0 TYPE string
SSCAN nokey "" BADOPT
ZSCAN nokey ""
HSCAN nokey ""
SCAN 0 TYPE
SREM big 1 2 3 4 x
EXISTS big
CONFIG SET set-max-intset-entries 512
SADD words a b c
~SINTER words words
~SUNION words big
SMOVE words other a
~SMEMBERS other
SCARD words
~SPOP words 5
EXISTS words

# ------------------------------------------------------- bitmaps
flushall
setbit bm 7 1
get bm
setbit bm 7 1
setbit bm 7 0
getbit bm 7
getbit bm 0
getbit bm 100000
getbit nokey 3
setbit bm 100 1
strlen bm
object encoding bm
setbit bm -1 1
setbit bm 1 2
setbit bm 1 -1
setbit bm x 1
setbit bm 4294967296 1
setbit bm 4294967295 0
getbit bm 4294967296
getbit bm -1
set num 12345
getbit num 2
setbit num 0 1
get num
object encoding num
bitcount num
set s foobar
bitcount s
bitcount s 0 0
bitcount s 1 1
bitcount s 1 -1
bitcount s -2 -1
bitcount s -1 -2
bitcount s -1 -2 FOO
bitcount s 5 30
bitcount s 0 -1 BIT
bitcount s 5 30 BIT
bitcount s -7 -3 bit
bitcount s 0 0 byte
bitcount s 0
bitcount s 0 1 2 3
bitcount s 0 1 WORD
bitcount s a b
bitcount nokey
bitcount nokey 0
bitcount nokey a b c d
set empty ""
bitcount empty
bitcount empty 0 -1 BIT
rpush l a
setbit l 0 1
getbit l 0
bitcount l
bitcount s 0 -1 "bit\x00x"
bitcount s 1 -2 BYTE
bitcount s -100 100
bitcount s -100 100 BIT
bitcount s 9223372036854775807 -9223372036854775808
bitcount s -9223372036854775808 9223372036854775807 bit
bitcount s 47 47 bit
bitcount s 40 47 BIT
set n 1234567
bitcount n
bitcount n 1 -2 bit
object encoding n

# ------------------------------------------------------- BITPOS
flushall
set s "\xff\xf0\x00"
bitpos s 0
bitpos s 1
bitpos s 0 1
bitpos s 1 1
bitpos s 0 2 -1
bitpos s 1 2
bitpos s 1 3
bitpos s 0 3
bitpos s 0 -1
bitpos s 0 -2 -1
bitpos s 1 -3 -3
bitpos s 0 0 0
bitpos s 0 0 1
bitpos s 0 0 1 BYTE
bitpos s 0 0 -1 BIT
bitpos s 1 0 -1 bit
bitpos s 0 5 9 BIT
bitpos s 1 9 15 BIT
bitpos s 1 12 15 BIT
bitpos s 0 3 5 BIT
bitpos s 1 17 23 BIT
bitpos s 0 17 19 BIT
bitpos s 1 -5 -1 BIT
bitpos s 0 -100 100 BIT
bitpos s 1 100 200 BIT
bitpos s 1 -1 -2
bitpos s 0 3 2 BIT
bitpos s 1 9223372036854775807
bitpos s 0 -9223372036854775808 9223372036854775807 BIT
bitpos s 0 0 -1 "bit\x00zz"
bitpos s 2
bitpos s -1
bitpos s x
bitpos s 1 x
bitpos s 1 0 x
bitpos s 1 0 x WORD
bitpos s 1 0 0 WORD
bitpos s 1 0 0 BIT extra
set ones "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
bitpos ones 0
bitpos ones 0 0
bitpos ones 0 0 -1
bitpos ones 0 0 -1 BIT
bitpos ones 1 5
set zeros "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
bitpos zeros 1
bitpos zeros 0
bitpos zeros 1 -1
set empty ""
bitpos empty 0
bitpos empty 1
bitpos empty 0 0
bitpos empty 0 0 -1 BIT
bitpos nokey 0
bitpos nokey 1
bitpos nokey 0 x y z w
bitpos nokey 2
set n 12
bitpos n 1
bitpos n 0 1
rpush l a
bitpos l 1
bitpos l 2
bitpos l 1 x

# ------------------------------------------------------- BITOP
flushall
set a "\x0f\xf0\xaa"
set b "\xff\x0f"
set c "\x01"
bitop and d a b
get d
object encoding d
bitop or d a b c
get d
bitop xor d a b c
get d
bitop xor d a a
get d
bitop not d a
get d
bitop not d c
get d
bitop and d a nokey
get d
bitop or d nokey a
get d
bitop or d nokey nokey2
exists d
set d x
expire d 100
bitop and d nokey
exists d
bitop or d a
ttl d
set d2 v
expire d2 100
bitop and d2 a b
ttl d2
bitop AnD d a b
bitop "or\x00x" d a
bitop nand d a b
bitop not d a b
bitop not d
bitop and d
bitop and
set n 123
bitop or d n a
get d
object encoding n
set e ""
bitop or d e
exists d
bitop not d e
bitop and a a b
get a
rpush l x
bitop or d a l
bitop or l a
type l
bitop foo l a
bitop not d l b

# ------------------------------------------------------- BITFIELD
flushall
bitfield bf set i8 0 100 get i8 0
bitfield bf incrby i8 0 27 incrby i8 0 1
bitfield bf overflow sat incrby i8 0 100 incrby i8 0 -300
bitfield bf overflow fail incrby i8 0 1 incrby i8 0 -1 get i8 0
bitfield bf overflow wrap incrby i8 0 -200
bitfield bf set u8 0 255 incrby u8 0 1 get u8 0
bitfield bf overflow sat incrby u8 0 300 incrby u8 0 -300 incrby u8 0 -1
bitfield bf overflow fail set u8 0 256 set u8 0 -1 set u8 0 255 incrby u8 0 1
bitfield bf overflow sat set u8 0 -1 set i8 0 -1000 set i8 0 1000
bitfield bf overflow wrap set i8 0 200 set u8 0 -1 get u8 0
bitfield bf set i64 0 9223372036854775807 incrby i64 0 1 get i64 0
bitfield bf overflow sat set i64 0 9223372036854775807 incrby i64 0 1 incrby i64 0 -9223372036854775808 incrby i64 0 -9223372036854775808 incrby i64 0 -1
bitfield bf overflow fail set i64 0 -9223372036854775808 incrby i64 0 -1 incrby i64 0 9223372036854775807 incrby i64 0 1
bitfield bf set u63 0 9223372036854775807 incrby u63 0 1
bitfield bf overflow sat set u63 0 0 incrby u63 0 -1 incrby u63 0 9223372036854775807 incrby u63 0 1
bitfield bf overflow fail set u63 0 -1
bitfield bf set i1 0 -1 get i1 0 incrby i1 0 1 set u1 0 1 incrby u1 0 1
bitfield bf overflow sat incrby i1 0 5 incrby i1 0 -5 incrby u1 0 5
bitfield bf set i5 3 -7 get i5 3 get u5 3 get u8 0 get i16 #0
bitfield bf set u8 #1 200 get u8 8 get u8 #1 set u4 #3 9 get u16 0
bitfield bf incrby u2 #100 1 get u2 200
strlen bf
bitfield bf set u16 1000 1
strlen bf
object encoding bf
bitfield bf get u8 5000000 get i64 5000001 get u3 #100000000
bitfield bf get u8 0 get i8 1 get u63 2 get i64 3 get i64 #0
bitfield bf get u8 4294967288 get i64 4294967294
bitfield bf get u8 4294967296
bitfield bf get u8 #536870911
bitfield bf get u8 #536870912
bitfield bf get i64 #67108863
bitfield bf get i64 #67108864
bitfield bf get u8 #2305843009213693953
bitfield bf get u8 #-2305843009213693951
bitfield bf get i2 #4611686018427387904
bitfield bf get u8 #9223372036854775807
bitfield bf get u8 #-1
bitfield bf get u8 #
bitfield bf get u8 -1
bitfield bf get u8 ""
bitfield bf get u8 01
bitfield bf get u8 +1
bitfield bf get u8 1.5
bitfield bf get u64 0
bitfield bf get i65 0
bitfield bf get i0 0
bitfield bf get u0 0
bitfield bf get U8 0
bitfield bf get i+8 0
bitfield bf get i08 0
bitfield bf get i 0
bitfield bf get "" 0
bitfield bf get x8 0
bitfield bf get "u8\x00zz" 0
bitfield bf "get\x00" u8 0
bitfield bf overflow "sat\x00" get u8 0
bitfield bf set u8 0 x
bitfield bf set u8 0 9223372036854775808
bitfield bf incrby u8 0 1.5
bitfield bf get u64 0 set u8 0 x
bitfield bf set u8 x x
bitfield bf overflow foo get u8 0
bitfield bf overflow
bitfield bf get
bitfield bf get u8
bitfield bf set u8 0
bitfield bf incrby u8 0
bitfield bf foo
bitfield bf get u8 0 overflow
bitfield bf get u8 0 foo u8 0
bitfield bf get u8 0 incrby u8 1
bitfield bf overflow wrap overflow sat overflow fail
bitfield bf
bitfield nokey get u8 0 get i8 #3
exists nokey
bitfield nokey overflow wrap
exists nokey
bitfield nokey2 overflow fail incrby u2 100 10
exists nokey2
strlen nokey2
bitfield nokey3 set u8 0 0
get nokey3
object encoding nokey3
set n 12345
bitfield n get u8 0 get i16 #1
object encoding n
bitfield n incrby u8 0 0
object encoding n
get n
rpush l a
bitfield l get u8 0
bitfield l set u8 0 1
bitfield l foo
bitfield_ro l get u8 0

# ------------------------------------------------------- BITFIELD_RO
flushall
set s "\x80\x01"
bitfield_ro s get u8 0 get i8 0 get u16 0 get i1 0 get u1 15
bitfield_ro s get u8 #1
bitfield_ro s
bitfield_ro s set u8 0 1
get s
bitfield_ro s incrby u8 0 1
bitfield_ro s get u8 0 overflow sat
bitfield_ro s overflow sat get u8 0
bitfield_ro s overflow sat set u8 0 1
bitfield_ro s set u8 0 x
bitfield_ro s set u64 0 1
bitfield_ro s get u8 0 set i8 0 1
bitfield_ro nokey get u8 0
bitfield_ro nokey set u8 0 1
exists nokey
bitfield_ro s foo

# ------------------------------------------------------- LCS
flushall
set key1 ohmytext
set key2 mynewtext
lcs key1 key2
lcs key1 key2 LEN
lcs key1 key2 IDX
lcs key1 key2 IDX MINMATCHLEN 4
lcs key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN
lcs key1 key2 idx withmatchlen minmatchlen -5
lcs key1 key2 IDX LEN
lcs key1 key2 MINMATCHLEN
lcs key1 key2 MINMATCHLEN x
lcs key1 key2 BADOPT
lcs key1 nokey
lcs nokey1 nokey2 IDX
lcs key1 key1 IDX WITHMATCHLEN
set n1 1234567890
set n2 0987654321
lcs n1 n2 IDX WITHMATCHLEN
set r1 aaaaabbbbbaaaaa
set r2 ababababab
lcs r1 r2
lcs r1 r2 IDX WITHMATCHLEN
rpush alist x
lcs alist key1 BADOPT
lcs key1 alist

# ------------------------------------------------------- sorted sets
flushall
zadd z 1.1 a -0 b 1e300 c 0.1 d 123456789012345678 e 1e-5 f inf g 3 h
zrange z 0 -1 withscores
zscore z a
zscore z b
zincrby z 1 zz
zadd z 1e17 i 1.5e-7 j 100 k
zscore z i
zscore z j
zscore z k
zscore z e
zmscore z a nope
CONFIG SET zset-max-listpack-entries 128
CONFIG SET set-max-intset-entries 512
flushall
config set zset-max-listpack-entries 0
zadd z -0 b
object encoding z
zscore z b
!zincrby z -0 b
zadd z 0 b
zscore z b
zadd z -0 b
zscore z b
config set zset-max-listpack-entries 128
zadd y -0 b
zincrby y -0 c
zscore y c
zadd y nan x
zadd y inf x
zincrby y -inf x
zadd y 1 x 2
zadd y
zadd y xx nx 1 a
zadd y gt lt 1 a
zadd y gt nx 1 a
zadd y incr 1 a 2 b
zadd y incr 1 a
zadd y incr xx 1 nosuch
zadd y incr nx 1 x
zadd y ch 5 x 6 new
zadd y gt ch 1 x 7 new
zadd y lt 1 x
zadd y incr gt -1 x
zadd y 1e400 q
zadd y abc q
zadd y " 1" q
zadd y "1 " q
zadd y 0x10 q
zadd y 1e q
zadd y inf q -inf r +inf s
zrange y 0 -1 withscores
zadd y INF q2 -INFINITY r2 Infinity s2 +Inf s3
zrange y 0 -1 withscores
CONFIG SET zset-max-listpack-entries 128
CONFIG SET set-max-intset-entries 512
flushall
zadd z 1 a 2 b 3 c
bzmpop 0 1 z min
bzmpop x 1 z min
bzpopmin z x
bzpopmin z -1
bzmpop 1 0 z min
bzmpop 1 1 z min count 0
zrange z 0 -1 withscores
!zrandmember z -2 withscores
zrandmember z 0 withscores
zrandmember nokey 2
zrandmember nokey
zrandmember z 1 foo
zrandmember z 9223372036854775807 withscores
zrandmember z -9223372036854775808
zrange nokey 0 -1
zrange z 0 -1 bylex withscores
zrange z 0 -1 limit 0 1
zrangebyscore z -inf +inf withscores limit 0 1
zrevrange z 0 -1 rev
zrangebyscore z -inf +inf byscore
zrange z (1 2 byscore
zrange z x 2 byscore
zrange z x 2
zrange z a b bylex
zrange z 0 -1 limit 0
zrange z 0 -1 limit x 1 byscore
zunion 1 z withscores
zscan z 0
zmscore nokey a
zscore nokey a
zrank z c
zrank z nope
zrevrank z c
zcount z ( 3
zcount z (1 (3
zcount z "( 2" 3
zcount z (1e400 3
zcount z -(1 3
zcount z 1e400 3
zlexcount z - +
zlexcount z [b (c
zlexcount z b c
zlexcount z ++ -
CONFIG SET zset-max-listpack-entries 128
CONFIG SET set-max-intset-entries 512
flushall
zadd z 1 a 2 b 3 c 4 d 5 e 5 f 5 g -inf m +inf n
zrange z 0 -1 withscores
zrange z -3 -1
zrange z 5 2
zrange z -100 100
zrange z 0 0 rev withscores
zrange z 1 3 rev
zrevrange z 0 2 withscores
zrangebyscore z (1 5
zrangebyscore z (1 (5 withscores
zrangebyscore z -inf +inf limit 2 3
zrangebyscore z -inf +inf limit -1 3
zrangebyscore z -inf +inf limit 2 -1
zrangebyscore z -inf +inf limit 2 0
zrangebyscore z -inf +inf limit 100 2
zrevrangebyscore z +inf -inf limit 1 2 withscores
zrevrangebyscore z 5 (2
zrevrangebyscore z (2 5
zrange z 5 (2 byscore rev
zrange z (2 5 byscore rev limit 0 2
zrange z 5 5 byscore
zrange z (5 5 byscore
zcount z 5 5
zcount z -inf inf
zadd l 0 a 0 b 0 c 0 d 0 e 0 f 0 g
zrangebylex l - +
zrangebylex l [b (e
zrangebylex l (b [e limit 1 2
zrevrangebylex l + - limit 0 3
zrevrangebylex l [e (b
zrange l [e (b bylex rev
zrange l (b [e bylex limit 1 10
zlexcount l [c +
zlexcount l (c (c
zlexcount l [c [c
zremrangebylex l [b [c
zrange l 0 -1
zremrangebyscore z (4 5
zrange z 0 -1 withscores
zremrangebyrank z 0 0
zremrangebyrank z -1 -1
zremrangebyrank z 5 1
zrange z 0 -1 withscores
zremrangebyrank z x 1
zremrangebyscore z x 1
zremrangebylex z x 1
zremrangebyrank z 0 -1
exists z
zadd a 1 x 2 y 3 z
zadd b 10 y 20 z 30 w
sadd s y w q
zunion 2 a b withscores
zunion 2 a b weights 2 3 withscores
zunion 2 a b aggregate min withscores
zunion 2 a b aggregate max weights 1 -1 withscores
zinter 2 a b withscores
zinter 3 a b s withscores
zunion 3 a b s withscores
zdiff 2 a b withscores
zdiff 2 b s withscores
zdiff 1 a
zunionstore out 2 a b
zrange out 0 -1 withscores
object encoding out
zinterstore out 2 a nokey
exists out
zdiffstore out 2 b a
zrange out 0 -1 withscores
zintercard 2 a b
zintercard 2 a b limit 1
zintercard 1 a limit 0
zintercard 0 a
zintercard 1 a limit -1
zintercard 1 a weights 1
zunion 0 a
zunionstore out 0 a
zunion x a
zunion 3 a b
zunion 2 a b weights 1
zunion 2 a b weights 1 x
zunion 2 a b aggregate foo
zunion 2 a b withscores withscores
zunionstore out 2 a b withscores
zdiff 2 a b weights 1 2
set str v
zunion 2 a str
zunion 2 a str weights x
zinter 2 nokey str
zadd inf 1 x
zunion 2 a inf weights inf -inf withscores
zunion 2 a a weights inf -inf withscores
zinter 2 a a weights inf -inf withscores
zinter 2 a a aggregate max weights inf -inf withscores
zrangestore dst a 0 -1
zrange dst 0 -1 withscores
zrangestore dst a (1 +inf byscore rev
zrangestore dst a +inf (1 byscore rev limit 0 1
zrange dst 0 -1 withscores
zrangestore dst a [y + bylex
zrange dst 0 -1 withscores
zrangestore dst a 0 -1 withscores
zrangestore dst nokey 0 -1
exists dst
zrangestore dst str 0 -1
zrank a z
zrevrank a z
zrank a nope
zrank nokey a
zrank str a
zscore str a
zcard str
zadd str 1 a
zrange str 0 -1
zincrby a 1.5 x
zincrby a x x
zincrby a 1 new
zincrby a -inf new
zincrby a +inf new
zadd a xx ch incr 1 x
zadd a nx 5 x 6 qq
zadd a gt ch 100 x 0 y
zadd a lt ch 100 x 0 y
zrange a 0 -1 withscores
zadd a xx 1 nope
exists a
zadd newkey xx 1 a
exists newkey
zadd newkey xx incr 1 a
zmscore a x nope y
zrem a x nope y
zrem nokey a
zrem a z new qq
zrange a 0 -1 withscores
exists a
CONFIG SET zset-max-listpack-entries 128
CONFIG SET set-max-intset-entries 512
config set zset-max-listpack-entries 0
config set set-max-intset-entries 0
flushall
zadd z 1 a 2 b 3 c 4 d 5 e 5 f 5 g -inf m +inf n
zrange z 0 -1 withscores
zrange z -3 -1
zrange z 5 2
zrange z -100 100
zrange z 0 0 rev withscores
zrange z 1 3 rev
zrevrange z 0 2 withscores
zrangebyscore z (1 5
zrangebyscore z (1 (5 withscores
zrangebyscore z -inf +inf limit 2 3
zrangebyscore z -inf +inf limit -1 3
zrangebyscore z -inf +inf limit 2 -1
zrangebyscore z -inf +inf limit 2 0
zrangebyscore z -inf +inf limit 100 2
zrevrangebyscore z +inf -inf limit 1 2 withscores
zrevrangebyscore z 5 (2
zrevrangebyscore z (2 5
zrange z 5 (2 byscore rev
zrange z (2 5 byscore rev limit 0 2
zrange z 5 5 byscore
zrange z (5 5 byscore
zcount z 5 5
zcount z -inf inf
zadd l 0 a 0 b 0 c 0 d 0 e 0 f 0 g
zrangebylex l - +
zrangebylex l [b (e
zrangebylex l (b [e limit 1 2
zrevrangebylex l + - limit 0 3
zrevrangebylex l [e (b
zrange l [e (b bylex rev
zrange l (b [e bylex limit 1 10
zlexcount l [c +
zlexcount l (c (c
zlexcount l [c [c
zremrangebylex l [b [c
zrange l 0 -1
zremrangebyscore z (4 5
zrange z 0 -1 withscores
zremrangebyrank z 0 0
zremrangebyrank z -1 -1
zremrangebyrank z 5 1
zrange z 0 -1 withscores
zremrangebyrank z x 1
zremrangebyscore z x 1
zremrangebylex z x 1
zremrangebyrank z 0 -1
exists z
zadd a 1 x 2 y 3 z
zadd b 10 y 20 z 30 w
sadd s y w q
zunion 2 a b withscores
zunion 2 a b weights 2 3 withscores
zunion 2 a b aggregate min withscores
zunion 2 a b aggregate max weights 1 -1 withscores
zinter 2 a b withscores
zinter 3 a b s withscores
zunion 3 a b s withscores
zdiff 2 a b withscores
zdiff 2 b s withscores
zdiff 1 a
zunionstore out 2 a b
zrange out 0 -1 withscores
object encoding out
zinterstore out 2 a nokey
exists out
zdiffstore out 2 b a
zrange out 0 -1 withscores
zintercard 2 a b
zintercard 2 a b limit 1
zintercard 1 a limit 0
zintercard 0 a
zintercard 1 a limit -1
zintercard 1 a weights 1
zunion 0 a
zunionstore out 0 a
zunion x a
zunion 3 a b
zunion 2 a b weights 1
zunion 2 a b weights 1 x
zunion 2 a b aggregate foo
zunion 2 a b withscores withscores
zunionstore out 2 a b withscores
zdiff 2 a b weights 1 2
set str v
zunion 2 a str
zunion 2 a str weights x
zinter 2 nokey str
zadd inf 1 x
zunion 2 a inf weights inf -inf withscores
zunion 2 a a weights inf -inf withscores
zinter 2 a a weights inf -inf withscores
zinter 2 a a aggregate max weights inf -inf withscores
zrangestore dst a 0 -1
zrange dst 0 -1 withscores
zrangestore dst a (1 +inf byscore rev
zrangestore dst a +inf (1 byscore rev limit 0 1
zrange dst 0 -1 withscores
zrangestore dst a [y + bylex
zrange dst 0 -1 withscores
zrangestore dst a 0 -1 withscores
zrangestore dst nokey 0 -1
exists dst
zrangestore dst str 0 -1
zrank a z
zrevrank a z
zrank a nope
zrank nokey a
zrank str a
zscore str a
zcard str
zadd str 1 a
zrange str 0 -1
zincrby a 1.5 x
zincrby a x x
zincrby a 1 new
zincrby a -inf new
zincrby a +inf new
zadd a xx ch incr 1 x
zadd a nx 5 x 6 qq
zadd a gt ch 100 x 0 y
zadd a lt ch 100 x 0 y
zrange a 0 -1 withscores
zadd a xx 1 nope
exists a
zadd newkey xx 1 a
exists newkey
zadd newkey xx incr 1 a
zmscore a x nope y
zrem a x nope y
zrem nokey a
zrem a z new qq
zrange a 0 -1 withscores
exists a
object encoding a
config set zset-max-listpack-entries 128
config set set-max-intset-entries 512
CONFIG SET zset-max-listpack-entries 128
CONFIG SET set-max-intset-entries 512
# ---------------------------------------------------------------- streams
FLUSHALL
XADD s 1-1 a 1 b 2
XADD s 1-* a 3 b 4
XADD s 1-3 b 3 a 4
XADD s 2 a 1
XADD s 2-* a "" b 12345678901234567890123
XADD s 3-0 "" "" x -5
XADD s 3-0 a 1
XADD s 0-0 a 1
XADD s 1-x a 1
XADD s - a 1
XADD s 18446744073709551616-0 a 1
XADD s 9-0 a
XADD s MAXLEN 5
XADD s MAXLEN 1 LIMIT 5 9-0 a b
XADD s MINID 1 MAXLEN 1 9-0 a b
XADD s MAXLEN -1 9-0 a b
XADD s MAXLEN ~ 1 LIMIT -1 9-0 a b
XADD s LIMIT 5 9-0 a b
XADD nokey NOMKSTREAM 1-0 a b
EXISTS nokey
XADD fresh 0-* a 1
XRANGE s - +
XREVRANGE s + -
XRANGE s 1 1
XRANGE s (1-1 (3
XREVRANGE s (3 (1-1 COUNT 2
XRANGE s - + COUNT 2
XRANGE s - + COUNT 0
XRANGE s - + COUNT -5
XRANGE nokey - + COUNT 0
XRANGE s (- +
XRANGE s ( +
XRANGE s (18446744073709551615-18446744073709551615 +
XRANGE s - (0-0
XRANGE s - + foo
XRANGE s - + COUNT
XLEN s
XLEN nokey
XINFO STREAM s
XDEL s 1-2 1-2 2-0 9-9
XDEL nokey bad
XDEL s bad
XINFO STREAM s
XINFO STREAM s FULL
XINFO STREAM s FULL COUNT 1
XINFO STREAM s FULL COUNT x
XINFO STREAM s FOO
XINFO STREAM nokey
XINFO HELP
XINFO FOO s
XSETID s 1
XSETID s 9-0 ENTRIESADDED 1
XSETID s 9-0 ENTRIESADDED -1
XSETID s 9-0 MAXDELETEDID 10-0
XSETID s 9-0 FOO
XSETID nokey 1
XSETID s 9-0 ENTRIESADDED 10 MAXDELETEDID 5-0
XINFO STREAM s
XADD max 18446744073709551615-18446744073709551615 a 1
XADD max 1-0 a 1
XADD max 18446744073709551615-* a 1
XTRIM s
XTRIM s MAXLEN
XTRIM s FOO 1
XTRIM s MAXLEN ~ x
XTRIM s MINID -
XTRIM nokey MAXLEN 0
XTRIM s MAXLEN = 100
XTRIM s MAXLEN ~ 100 LIMIT 2
XTRIM s MAXLEN 100 LIMIT 2
XTRIM s LIMIT 2
XTRIM s MAXLEN 1 MINID 1
XTRIM s MAXLEN x LIMIT -1
XTRIM s MAXLEN ~
XTRIM s MAXLEN =
XTRIM s LIMIT x MAXLEN 1
XTRIM s MINID ~ 1-x
XTRIM s NOMKSTREAM MAXLEN 1
XADD s NOMKSTREAM NOMKSTREAM MAXLEN = 100 9-0 a b
XADD s MAXLEN ~ 100 LIMIT 1 LIMIT x * a b
XADD s MAXLEN
XADD s LIMIT
XADD s maxlen ~
XADD s 9-0
# trimming across nodes of 100 entries
DEL t
!XADD t 1-0 f v1
!XADD t 2-0 f v2
!XADD t 3-0 f v3
!XADD t 4-0 f v4
!XADD t 5-0 f v5
!XADD t 6-0 f v6
!XADD t 7-0 f v7
!XADD t 8-0 f v8
!XADD t 9-0 f v9
!XADD t 10-0 f v10
!XADD t 11-0 f v11
!XADD t 12-0 f v12
!XADD t 13-0 f v13
!XADD t 14-0 f v14
!XADD t 15-0 f v15
!XADD t 16-0 f v16
!XADD t 17-0 f v17
!XADD t 18-0 f v18
!XADD t 19-0 f v19
!XADD t 20-0 f v20
!XADD t 21-0 f v21
!XADD t 22-0 f v22
!XADD t 23-0 f v23
!XADD t 24-0 f v24
!XADD t 25-0 f v25
!XADD t 26-0 f v26
!XADD t 27-0 f v27
!XADD t 28-0 f v28
!XADD t 29-0 f v29
!XADD t 30-0 f v30
!XADD t 31-0 f v31
!XADD t 32-0 f v32
!XADD t 33-0 f v33
!XADD t 34-0 f v34
!XADD t 35-0 f v35
!XADD t 36-0 f v36
!XADD t 37-0 f v37
!XADD t 38-0 f v38
!XADD t 39-0 f v39
!XADD t 40-0 f v40
!XADD t 41-0 f v41
!XADD t 42-0 f v42
!XADD t 43-0 f v43
!XADD t 44-0 f v44
!XADD t 45-0 f v45
!XADD t 46-0 f v46
!XADD t 47-0 f v47
!XADD t 48-0 f v48
!XADD t 49-0 f v49
!XADD t 50-0 f v50
!XADD t 51-0 f v51
!XADD t 52-0 f v52
!XADD t 53-0 f v53
!XADD t 54-0 f v54
!XADD t 55-0 f v55
!XADD t 56-0 f v56
!XADD t 57-0 f v57
!XADD t 58-0 f v58
!XADD t 59-0 f v59
!XADD t 60-0 f v60
!XADD t 61-0 f v61
!XADD t 62-0 f v62
!XADD t 63-0 f v63
!XADD t 64-0 f v64
!XADD t 65-0 f v65
!XADD t 66-0 f v66
!XADD t 67-0 f v67
!XADD t 68-0 f v68
!XADD t 69-0 f v69
!XADD t 70-0 f v70
!XADD t 71-0 f v71
!XADD t 72-0 f v72
!XADD t 73-0 f v73
!XADD t 74-0 f v74
!XADD t 75-0 f v75
!XADD t 76-0 f v76
!XADD t 77-0 f v77
!XADD t 78-0 f v78
!XADD t 79-0 f v79
!XADD t 80-0 f v80
!XADD t 81-0 f v81
!XADD t 82-0 f v82
!XADD t 83-0 f v83
!XADD t 84-0 f v84
!XADD t 85-0 f v85
!XADD t 86-0 f v86
!XADD t 87-0 f v87
!XADD t 88-0 f v88
!XADD t 89-0 f v89
!XADD t 90-0 f v90
!XADD t 91-0 f v91
!XADD t 92-0 f v92
!XADD t 93-0 f v93
!XADD t 94-0 f v94
!XADD t 95-0 f v95
!XADD t 96-0 f v96
!XADD t 97-0 f v97
!XADD t 98-0 f v98
!XADD t 99-0 f v99
!XADD t 100-0 f v100
!XADD t 101-0 f v101
!XADD t 102-0 f v102
!XADD t 103-0 f v103
!XADD t 104-0 f v104
!XADD t 105-0 f v105
!XADD t 106-0 f v106
!XADD t 107-0 f v107
!XADD t 108-0 f v108
!XADD t 109-0 f v109
!XADD t 110-0 f v110
!XADD t 111-0 f v111
!XADD t 112-0 f v112
!XADD t 113-0 f v113
!XADD t 114-0 f v114
!XADD t 115-0 f v115
!XADD t 116-0 f v116
!XADD t 117-0 f v117
!XADD t 118-0 f v118
!XADD t 119-0 f v119
!XADD t 120-0 f v120
!XADD t 121-0 f v121
!XADD t 122-0 f v122
!XADD t 123-0 f v123
!XADD t 124-0 f v124
!XADD t 125-0 f v125
!XADD t 126-0 f v126
!XADD t 127-0 f v127
!XADD t 128-0 f v128
!XADD t 129-0 f v129
!XADD t 130-0 f v130
!XADD t 131-0 f v131
!XADD t 132-0 f v132
!XADD t 133-0 f v133
!XADD t 134-0 f v134
!XADD t 135-0 f v135
!XADD t 136-0 f v136
!XADD t 137-0 f v137
!XADD t 138-0 f v138
!XADD t 139-0 f v139
!XADD t 140-0 f v140
!XADD t 141-0 f v141
!XADD t 142-0 f v142
!XADD t 143-0 f v143
!XADD t 144-0 f v144
!XADD t 145-0 f v145
!XADD t 146-0 f v146
!XADD t 147-0 f v147
!XADD t 148-0 f v148
!XADD t 149-0 f v149
!XADD t 150-0 f v150
!XADD t 151-0 f v151
!XADD t 152-0 f v152
!XADD t 153-0 f v153
!XADD t 154-0 f v154
!XADD t 155-0 f v155
!XADD t 156-0 f v156
!XADD t 157-0 f v157
!XADD t 158-0 f v158
!XADD t 159-0 f v159
!XADD t 160-0 f v160
!XADD t 161-0 f v161
!XADD t 162-0 f v162
!XADD t 163-0 f v163
!XADD t 164-0 f v164
!XADD t 165-0 f v165
!XADD t 166-0 f v166
!XADD t 167-0 f v167
!XADD t 168-0 f v168
!XADD t 169-0 f v169
!XADD t 170-0 f v170
!XADD t 171-0 f v171
!XADD t 172-0 f v172
!XADD t 173-0 f v173
!XADD t 174-0 f v174
!XADD t 175-0 f v175
!XADD t 176-0 f v176
!XADD t 177-0 f v177
!XADD t 178-0 f v178
!XADD t 179-0 f v179
!XADD t 180-0 f v180
!XADD t 181-0 f v181
!XADD t 182-0 f v182
!XADD t 183-0 f v183
!XADD t 184-0 f v184
!XADD t 185-0 f v185
!XADD t 186-0 f v186
!XADD t 187-0 f v187
!XADD t 188-0 f v188
!XADD t 189-0 f v189
!XADD t 190-0 f v190
!XADD t 191-0 f v191
!XADD t 192-0 f v192
!XADD t 193-0 f v193
!XADD t 194-0 f v194
!XADD t 195-0 f v195
!XADD t 196-0 f v196
!XADD t 197-0 f v197
!XADD t 198-0 f v198
!XADD t 199-0 f v199
!XADD t 200-0 f v200
!XADD t 201-0 f v201
!XADD t 202-0 f v202
!XADD t 203-0 f v203
!XADD t 204-0 f v204
!XADD t 205-0 f v205
!XADD t 206-0 f v206
!XADD t 207-0 f v207
!XADD t 208-0 f v208
!XADD t 209-0 f v209
!XADD t 210-0 f v210
!XADD t 211-0 f v211
!XADD t 212-0 f v212
!XADD t 213-0 f v213
!XADD t 214-0 f v214
!XADD t 215-0 f v215
!XADD t 216-0 f v216
!XADD t 217-0 f v217
!XADD t 218-0 f v218
!XADD t 219-0 f v219
!XADD t 220-0 f v220
!XADD t 221-0 f v221
!XADD t 222-0 f v222
!XADD t 223-0 f v223
!XADD t 224-0 f v224
!XADD t 225-0 f v225
!XADD t 226-0 f v226
!XADD t 227-0 f v227
!XADD t 228-0 f v228
!XADD t 229-0 f v229
!XADD t 230-0 f v230
!XADD t 231-0 f v231
!XADD t 232-0 f v232
!XADD t 233-0 f v233
!XADD t 234-0 f v234
!XADD t 235-0 f v235
!XADD t 236-0 f v236
!XADD t 237-0 f v237
!XADD t 238-0 f v238
!XADD t 239-0 f v239
!XADD t 240-0 f v240
!XADD t 241-0 f v241
!XADD t 242-0 f v242
!XADD t 243-0 f v243
!XADD t 244-0 f v244
!XADD t 245-0 f v245
!XADD t 246-0 f v246
!XADD t 247-0 f v247
!XADD t 248-0 f v248
!XADD t 249-0 f v249
!XADD t 250-0 f v250
XINFO STREAM t
XTRIM t MAXLEN ~ 120
XTRIM t MAXLEN = 120
XTRIM t MAXLEN 100
XTRIM t MINID 200
XTRIM t MINID ~ 250
XINFO STREAM t
XTRIM t MAXLEN ~ 0 LIMIT 10
XADD t MAXLEN 2 500-0 f v
XRANGE t - +
XINFO STREAM t
# stream nodes under CONFIG SET limits: approximate trimming drops
# whole nodes, so what goes depends on where nodes were split
CONFIG GET stream-node-max-bytes
CONFIG GET stream-node-max-entries
CONFIG SET stream-node-max-entries -1
CONFIG SET stream-node-max-bytes x
CONFIG SET stream-node-max-entries 10
CONFIG SET stream-node-max-bytes 1kb
CONFIG GET stream-node-max-bytes
DEL tn
!XADD tn 1-0 f v1
!XADD tn 2-0 f v2
!XADD tn 3-0 f v3
!XADD tn 4-0 f v4
!XADD tn 5-0 f v5
!XADD tn 6-0 f v6
!XADD tn 7-0 f v7
!XADD tn 8-0 f v8
!XADD tn 9-0 f v9
!XADD tn 10-0 f v10
!XADD tn 11-0 f v11
!XADD tn 12-0 f v12
!XADD tn 13-0 f v13
!XADD tn 14-0 f v14
!XADD tn 15-0 f v15
!XADD tn 16-0 f v16
!XADD tn 17-0 f v17
!XADD tn 18-0 f v18
!XADD tn 19-0 f v19
!XADD tn 20-0 f v20
!XADD tn 21-0 f v21
!XADD tn 22-0 f v22
!XADD tn 23-0 f v23
!XADD tn 24-0 f v24
!XADD tn 25-0 f v25
!XADD tn 26-0 f v26
!XADD tn 27-0 f v27
!XADD tn 28-0 f v28
!XADD tn 29-0 f v29
!XADD tn 30-0 f v30
!XADD tn 31-0 f v31
!XADD tn 32-0 f v32
!XADD tn 33-0 f v33
!XADD tn 34-0 f v34
!XADD tn 35-0 f v35
!XADD tn 36-0 f v36
!XADD tn 37-0 f v37
!XADD tn 38-0 f v38
!XADD tn 39-0 f v39
!XADD tn 40-0 f v40
!XADD tn 41-0 f v41
!XADD tn 42-0 f v42
!XADD tn 43-0 f v43
!XADD tn 44-0 f v44
!XADD tn 45-0 f v45
!XADD tn 46-0 f v46
!XADD tn 47-0 f v47
!XADD tn 48-0 f v48
!XADD tn 49-0 f v49
!XADD tn 50-0 f v50
!XADD tn 51-0 f v51
!XADD tn 52-0 f v52
!XADD tn 53-0 f v53
!XADD tn 54-0 f v54
!XADD tn 55-0 f v55
!XADD tn 56-0 f v56
!XADD tn 57-0 f v57
!XADD tn 58-0 f v58
!XADD tn 59-0 f v59
!XADD tn 60-0 f v60
!XADD tn 61-0 f v61
!XADD tn 62-0 f v62
!XADD tn 63-0 f v63
!XADD tn 64-0 f v64
!XADD tn 65-0 f v65
!XADD tn 66-0 f v66
!XADD tn 67-0 f v67
!XADD tn 68-0 f v68
!XADD tn 69-0 f v69
!XADD tn 70-0 f v70
!XADD tn 71-0 f v71
!XADD tn 72-0 f v72
!XADD tn 73-0 f v73
!XADD tn 74-0 f v74
!XADD tn 75-0 f v75
!XADD tn 76-0 f v76
!XADD tn 77-0 f v77
!XADD tn 78-0 f v78
!XADD tn 79-0 f v79
!XADD tn 80-0 f v80
!XADD tn 81-0 f v81
!XADD tn 82-0 f v82
!XADD tn 83-0 f v83
!XADD tn 84-0 f v84
!XADD tn 85-0 f v85
!XADD tn 86-0 f v86
!XADD tn 87-0 f v87
!XADD tn 88-0 f v88
!XADD tn 89-0 f v89
!XADD tn 90-0 f v90
!XADD tn 91-0 f v91
!XADD tn 92-0 f v92
!XADD tn 93-0 f v93
!XADD tn 94-0 f v94
!XADD tn 95-0 f v95
!XADD tn 96-0 f v96
!XADD tn 97-0 f v97
!XADD tn 98-0 f v98
!XADD tn 99-0 f v99
!XADD tn 100-0 f v100
!XADD tn 101-0 f v101
!XADD tn 102-0 f v102
!XADD tn 103-0 f v103
!XADD tn 104-0 f v104
!XADD tn 105-0 f v105
!XADD tn 106-0 f v106
!XADD tn 107-0 f v107
!XADD tn 108-0 f v108
!XADD tn 109-0 f v109
!XADD tn 110-0 f v110
!XADD tn 111-0 f v111
!XADD tn 112-0 f v112
!XADD tn 113-0 f v113
!XADD tn 114-0 f v114
!XADD tn 115-0 f v115
!XADD tn 116-0 f v116
!XADD tn 117-0 f v117
!XADD tn 118-0 f v118
!XADD tn 119-0 f v119
!XADD tn 120-0 f v120
!XADD tn 121-0 f v121
!XADD tn 122-0 f v122
!XADD tn 123-0 f v123
!XADD tn 124-0 f v124
!XADD tn 125-0 f v125
!XADD tn 126-0 f v126
!XADD tn 127-0 f v127
!XADD tn 128-0 f v128
!XADD tn 129-0 f v129
!XADD tn 130-0 f v130
!XADD tn 131-0 f v131
!XADD tn 132-0 f v132
!XADD tn 133-0 f v133
!XADD tn 134-0 f v134
!XADD tn 135-0 f v135
!XADD tn 136-0 f v136
!XADD tn 137-0 f v137
!XADD tn 138-0 f v138
!XADD tn 139-0 f v139
!XADD tn 140-0 f v140
!XADD tn 141-0 f v141
!XADD tn 142-0 f v142
!XADD tn 143-0 f v143
!XADD tn 144-0 f v144
!XADD tn 145-0 f v145
!XADD tn 146-0 f v146
!XADD tn 147-0 f v147
!XADD tn 148-0 f v148
!XADD tn 149-0 f v149
!XADD tn 150-0 f v150
!XADD tn 151-0 f v151
!XADD tn 152-0 f v152
!XADD tn 153-0 f v153
!XADD tn 154-0 f v154
!XADD tn 155-0 f v155
!XADD tn 156-0 f v156
!XADD tn 157-0 f v157
!XADD tn 158-0 f v158
!XADD tn 159-0 f v159
!XADD tn 160-0 f v160
!XADD tn 161-0 f v161
!XADD tn 162-0 f v162
!XADD tn 163-0 f v163
!XADD tn 164-0 f v164
!XADD tn 165-0 f v165
!XADD tn 166-0 f v166
!XADD tn 167-0 f v167
!XADD tn 168-0 f v168
!XADD tn 169-0 f v169
!XADD tn 170-0 f v170
!XADD tn 171-0 f v171
!XADD tn 172-0 f v172
!XADD tn 173-0 f v173
!XADD tn 174-0 f v174
!XADD tn 175-0 f v175
!XADD tn 176-0 f v176
!XADD tn 177-0 f v177
!XADD tn 178-0 f v178
!XADD tn 179-0 f v179
!XADD tn 180-0 f v180
!XADD tn 181-0 f v181
!XADD tn 182-0 f v182
!XADD tn 183-0 f v183
!XADD tn 184-0 f v184
!XADD tn 185-0 f v185
!XADD tn 186-0 f v186
!XADD tn 187-0 f v187
!XADD tn 188-0 f v188
!XADD tn 189-0 f v189
!XADD tn 190-0 f v190
!XADD tn 191-0 f v191
!XADD tn 192-0 f v192
!XADD tn 193-0 f v193
!XADD tn 194-0 f v194
!XADD tn 195-0 f v195
!XADD tn 196-0 f v196
!XADD tn 197-0 f v197
!XADD tn 198-0 f v198
!XADD tn 199-0 f v199
!XADD tn 200-0 f v200
!XADD tn 201-0 f v201
!XADD tn 202-0 f v202
!XADD tn 203-0 f v203
!XADD tn 204-0 f v204
!XADD tn 205-0 f v205
!XADD tn 206-0 f v206
!XADD tn 207-0 f v207
!XADD tn 208-0 f v208
!XADD tn 209-0 f v209
!XADD tn 210-0 f v210
!XADD tn 211-0 f v211
!XADD tn 212-0 f v212
!XADD tn 213-0 f v213
!XADD tn 214-0 f v214
!XADD tn 215-0 f v215
!XADD tn 216-0 f v216
!XADD tn 217-0 f v217
!XADD tn 218-0 f v218
!XADD tn 219-0 f v219
!XADD tn 220-0 f v220
!XADD tn 221-0 f v221
!XADD tn 222-0 f v222
!XADD tn 223-0 f v223
!XADD tn 224-0 f v224
!XADD tn 225-0 f v225
!XADD tn 226-0 f v226
!XADD tn 227-0 f v227
!XADD tn 228-0 f v228
!XADD tn 229-0 f v229
!XADD tn 230-0 f v230
!XADD tn 231-0 f v231
!XADD tn 232-0 f v232
!XADD tn 233-0 f v233
!XADD tn 234-0 f v234
!XADD tn 235-0 f v235
!XADD tn 236-0 f v236
!XADD tn 237-0 f v237
!XADD tn 238-0 f v238
!XADD tn 239-0 f v239
!XADD tn 240-0 f v240
!XADD tn 241-0 f v241
!XADD tn 242-0 f v242
!XADD tn 243-0 f v243
!XADD tn 244-0 f v244
!XADD tn 245-0 f v245
!XADD tn 246-0 f v246
!XADD tn 247-0 f v247
!XADD tn 248-0 f v248
!XADD tn 249-0 f v249
!XADD tn 250-0 f v250
XINFO STREAM tn
XTRIM tn MAXLEN ~ 120
XLEN tn
XTRIM tn MAXLEN ~ 0 LIMIT 25
XLEN tn
XTRIM tn MINID ~ 200
XLEN tn
XADD tn MAXLEN ~ 5 LIMIT 20 300-0 f v
XLEN tn
XADD tn MINID ~ 280 301-0 f v
XLEN tn
XRANGE tn - + COUNT 3
CONFIG SET stream-node-max-entries 0
CONFIG SET stream-node-max-bytes 200
DEL tb
!XADD tb 1-0 field1 x
!XADD tb 2-0 field2 xx
!XADD tb 3-0 field0 xxx
!XADD tb 4-0 field1 xxxx
!XADD tb 5-0 field2 xxxxx
!XADD tb 6-0 field0 xxxxxx
!XADD tb 7-0 field1 xxxxxxx
!XADD tb 8-0 field2 xxxxxxxx
!XADD tb 9-0 field0 xxxxxxxxx
!XADD tb 10-0 field1 xxxxxxxxxx
!XADD tb 11-0 field2 xxxxxxxxxxx
!XADD tb 12-0 field0 xxxxxxxxxxxx
!XADD tb 13-0 field1 xxxxxxxxxxxxx
!XADD tb 14-0 field2 xxxxxxxxxxxxxx
!XADD tb 15-0 field0 xxxxxxxxxxxxxxx
!XADD tb 16-0 field1 xxxxxxxxxxxxxxxx
!XADD tb 17-0 field2 xxxxxxxxxxxxxxxxx
!XADD tb 18-0 field0 xxxxxxxxxxxxxxxxxx
!XADD tb 19-0 field1 xxxxxxxxxxxxxxxxxxx
!XADD tb 20-0 field2 xxxxxxxxxxxxxxxxxxxx
!XADD tb 21-0 field0 xxxxxxxxxxxxxxxxxxxxx
!XADD tb 22-0 field1 xxxxxxxxxxxxxxxxxxxxxx
!XADD tb 23-0 field2 xxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 24-0 field0 xxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 25-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 26-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 27-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 28-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 29-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 30-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 31-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 32-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 33-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 34-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 35-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 36-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 37-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 38-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 39-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 40-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 41-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 42-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 43-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 44-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 45-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 46-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 47-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 48-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 49-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 50-0 field2 ""
!XADD tb 51-0 field0 x
!XADD tb 52-0 field1 xx
!XADD tb 53-0 field2 xxx
!XADD tb 54-0 field0 xxxx
!XADD tb 55-0 field1 xxxxx
!XADD tb 56-0 field2 xxxxxx
!XADD tb 57-0 field0 xxxxxxx
!XADD tb 58-0 field1 xxxxxxxx
!XADD tb 59-0 field2 xxxxxxxxx
!XADD tb 60-0 field0 xxxxxxxxxx
!XADD tb 61-0 field1 xxxxxxxxxxx
!XADD tb 62-0 field2 xxxxxxxxxxxx
!XADD tb 63-0 field0 xxxxxxxxxxxxx
!XADD tb 64-0 field1 xxxxxxxxxxxxxx
!XADD tb 65-0 field2 xxxxxxxxxxxxxxx
!XADD tb 66-0 field0 xxxxxxxxxxxxxxxx
!XADD tb 67-0 field1 xxxxxxxxxxxxxxxxx
!XADD tb 68-0 field2 xxxxxxxxxxxxxxxxxx
!XADD tb 69-0 field0 xxxxxxxxxxxxxxxxxxx
!XADD tb 70-0 field1 xxxxxxxxxxxxxxxxxxxx
!XADD tb 71-0 field2 xxxxxxxxxxxxxxxxxxxxx
!XADD tb 72-0 field0 xxxxxxxxxxxxxxxxxxxxxx
!XADD tb 73-0 field1 xxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 74-0 field2 xxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 75-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 76-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 77-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 78-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 79-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 80-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 81-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 82-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 83-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 84-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 85-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 86-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 87-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 88-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 89-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 90-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 91-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 92-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 93-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 94-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 95-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 96-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 97-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 98-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 99-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 100-0 field1 ""
!XADD tb 101-0 field2 x
!XADD tb 102-0 field0 xx
!XADD tb 103-0 field1 xxx
!XADD tb 104-0 field2 xxxx
!XADD tb 105-0 field0 xxxxx
!XADD tb 106-0 field1 xxxxxx
!XADD tb 107-0 field2 xxxxxxx
!XADD tb 108-0 field0 xxxxxxxx
!XADD tb 109-0 field1 xxxxxxxxx
!XADD tb 110-0 field2 xxxxxxxxxx
!XADD tb 111-0 field0 xxxxxxxxxxx
!XADD tb 112-0 field1 xxxxxxxxxxxx
!XADD tb 113-0 field2 xxxxxxxxxxxxx
!XADD tb 114-0 field0 xxxxxxxxxxxxxx
!XADD tb 115-0 field1 xxxxxxxxxxxxxxx
!XADD tb 116-0 field2 xxxxxxxxxxxxxxxx
!XADD tb 117-0 field0 xxxxxxxxxxxxxxxxx
!XADD tb 118-0 field1 xxxxxxxxxxxxxxxxxx
!XADD tb 119-0 field2 xxxxxxxxxxxxxxxxxxx
!XADD tb 120-0 field0 xxxxxxxxxxxxxxxxxxxx
!XADD tb 121-0 field1 xxxxxxxxxxxxxxxxxxxxx
!XADD tb 122-0 field2 xxxxxxxxxxxxxxxxxxxxxx
!XADD tb 123-0 field0 xxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 124-0 field1 xxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 125-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 126-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 127-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 128-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 129-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 130-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 131-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 132-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 133-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 134-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 135-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 136-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 137-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 138-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 139-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 140-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 141-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 142-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 143-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 144-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 145-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 146-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 147-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 148-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 149-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 150-0 field0 ""
!XADD tb 151-0 field1 x
!XADD tb 152-0 field2 xx
!XADD tb 153-0 field0 xxx
!XADD tb 154-0 field1 xxxx
!XADD tb 155-0 field2 xxxxx
!XADD tb 156-0 field0 xxxxxx
!XADD tb 157-0 field1 xxxxxxx
!XADD tb 158-0 field2 xxxxxxxx
!XADD tb 159-0 field0 xxxxxxxxx
!XADD tb 160-0 field1 xxxxxxxxxx
!XADD tb 161-0 field2 xxxxxxxxxxx
!XADD tb 162-0 field0 xxxxxxxxxxxx
!XADD tb 163-0 field1 xxxxxxxxxxxxx
!XADD tb 164-0 field2 xxxxxxxxxxxxxx
!XADD tb 165-0 field0 xxxxxxxxxxxxxxx
!XADD tb 166-0 field1 xxxxxxxxxxxxxxxx
!XADD tb 167-0 field2 xxxxxxxxxxxxxxxxx
!XADD tb 168-0 field0 xxxxxxxxxxxxxxxxxx
!XADD tb 169-0 field1 xxxxxxxxxxxxxxxxxxx
!XADD tb 170-0 field2 xxxxxxxxxxxxxxxxxxxx
!XADD tb 171-0 field0 xxxxxxxxxxxxxxxxxxxxx
!XADD tb 172-0 field1 xxxxxxxxxxxxxxxxxxxxxx
!XADD tb 173-0 field2 xxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 174-0 field0 xxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 175-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 176-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 177-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 178-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 179-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 180-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 181-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 182-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 183-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 184-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 185-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 186-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 187-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 188-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 189-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 190-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 191-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 192-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 193-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 194-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 195-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 196-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 197-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 198-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 199-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 200-0 field2 ""
!XADD tb 201-0 field0 x
!XADD tb 202-0 field1 xx
!XADD tb 203-0 field2 xxx
!XADD tb 204-0 field0 xxxx
!XADD tb 205-0 field1 xxxxx
!XADD tb 206-0 field2 xxxxxx
!XADD tb 207-0 field0 xxxxxxx
!XADD tb 208-0 field1 xxxxxxxx
!XADD tb 209-0 field2 xxxxxxxxx
!XADD tb 210-0 field0 xxxxxxxxxx
!XADD tb 211-0 field1 xxxxxxxxxxx
!XADD tb 212-0 field2 xxxxxxxxxxxx
!XADD tb 213-0 field0 xxxxxxxxxxxxx
!XADD tb 214-0 field1 xxxxxxxxxxxxxx
!XADD tb 215-0 field2 xxxxxxxxxxxxxxx
!XADD tb 216-0 field0 xxxxxxxxxxxxxxxx
!XADD tb 217-0 field1 xxxxxxxxxxxxxxxxx
!XADD tb 218-0 field2 xxxxxxxxxxxxxxxxxx
!XADD tb 219-0 field0 xxxxxxxxxxxxxxxxxxx
!XADD tb 220-0 field1 xxxxxxxxxxxxxxxxxxxx
!XADD tb 221-0 field2 xxxxxxxxxxxxxxxxxxxxx
!XADD tb 222-0 field0 xxxxxxxxxxxxxxxxxxxxxx
!XADD tb 223-0 field1 xxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 224-0 field2 xxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 225-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 226-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 227-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 228-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 229-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 230-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 231-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 232-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 233-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 234-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 235-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 236-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 237-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 238-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 239-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 240-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 241-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 242-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 243-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 244-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 245-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 246-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 247-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 248-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 249-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 250-0 field1 ""
!XADD tb 251-0 field2 x
!XADD tb 252-0 field0 xx
!XADD tb 253-0 field1 xxx
!XADD tb 254-0 field2 xxxx
!XADD tb 255-0 field0 xxxxx
!XADD tb 256-0 field1 xxxxxx
!XADD tb 257-0 field2 xxxxxxx
!XADD tb 258-0 field0 xxxxxxxx
!XADD tb 259-0 field1 xxxxxxxxx
!XADD tb 260-0 field2 xxxxxxxxxx
!XADD tb 261-0 field0 xxxxxxxxxxx
!XADD tb 262-0 field1 xxxxxxxxxxxx
!XADD tb 263-0 field2 xxxxxxxxxxxxx
!XADD tb 264-0 field0 xxxxxxxxxxxxxx
!XADD tb 265-0 field1 xxxxxxxxxxxxxxx
!XADD tb 266-0 field2 xxxxxxxxxxxxxxxx
!XADD tb 267-0 field0 xxxxxxxxxxxxxxxxx
!XADD tb 268-0 field1 xxxxxxxxxxxxxxxxxx
!XADD tb 269-0 field2 xxxxxxxxxxxxxxxxxxx
!XADD tb 270-0 field0 xxxxxxxxxxxxxxxxxxxx
!XADD tb 271-0 field1 xxxxxxxxxxxxxxxxxxxxx
!XADD tb 272-0 field2 xxxxxxxxxxxxxxxxxxxxxx
!XADD tb 273-0 field0 xxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 274-0 field1 xxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 275-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 276-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 277-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 278-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 279-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 280-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 281-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 282-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 283-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 284-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 285-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 286-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 287-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 288-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 289-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 290-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 291-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 292-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 293-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 294-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 295-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 296-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 297-0 field0 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 298-0 field1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 299-0 field2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
!XADD tb 300-0 field0 ""
XINFO STREAM tb
XTRIM tb MAXLEN ~ 250
XLEN tb
XTRIM tb MINID ~ 200
XLEN tb
XTRIM tb MAXLEN ~ 10 LIMIT 30
XLEN tb
XTRIM tb MAXLEN ~ 0
XLEN tb
CONFIG SET stream-node-max-entries 100
CONFIG SET stream-node-max-bytes 4096
# consumer groups
DEL g
XGROUP CREATE g grp $ MKSTREAM
XGROUP CREATE g grp $
XGROUP CREATE nokey grp $
XGROUP CREATE g grp2 0 ENTRIESREAD -2
XGROUP CREATE g grp2 0 MKSTREAM FOO
XGROUP CREATE g grp2 +
XINFO GROUPS g
XADD g 1-0 n 1
XADD g 2-0 n 2
XADD g 3-0 n 3
XADD g 4-0 n 4
XADD g 5-0 n 5
XINFO GROUPS g
XREADGROUP GROUP grp alice COUNT 2 STREAMS g >
XREADGROUP GROUP grp bob STREAMS g >
XREADGROUP GROUP grp bob STREAMS g >
XREADGROUP GROUP grp bob BLOCK 10 STREAMS g >
XREADGROUP GROUP grp bob STREAMS g 18446744073709551615-18446744073709551615
XPENDING g grp
XPENDING g grp - + 10 nobody
XPENDING g grp IDLE 100000000 - + 10
XREADGROUP GROUP grp alice STREAMS g 0
XREADGROUP GROUP grp alice COUNT 1 STREAMS g 1-0
XACK g grp 1-0 1-0 9-0
XACK g grp bad
XACK g nogrp 1-0
XACK nokey grp bad
XDEL g 2-0
XREADGROUP GROUP grp alice STREAMS g 0
XINFO GROUPS g
XCLAIM g grp carol 0 3-0 JUSTID
XCLAIM g grp carol 0 4-0 RETRYCOUNT 7
XCLAIM g grp carol 3600000 5-0
XCLAIM g grp carol 0 2-0
XPENDING g grp
XADD g 6-0 n 6
XCLAIM g grp dave 0 6-0 FORCE JUSTID
XCLAIM g grp dave 0 7-0 FORCE
XCLAIM g grp dave 0 6-0 FOO
XCLAIM g grp dave x 6-0
XCLAIM g grp dave 0 6-0 IDLE x
XCLAIM g grp dave 0 6-0 TIME x
XCLAIM g grp dave 0 6-0 RETRYCOUNT x
XCLAIM g grp dave 0 6-0 LASTID x
XCLAIM g nogrp dave 0 6-0
XCLAIM nokey grp dave 0 6-0
XDEL g 3-0
XAUTOCLAIM g grp erin 0 0 COUNT 2
XAUTOCLAIM g grp erin 0 5-0 JUSTID
XAUTOCLAIM g grp erin 0 0 COUNT 0
XAUTOCLAIM g grp erin 0 0 COUNT x
XAUTOCLAIM g grp erin x 0
XAUTOCLAIM g grp erin 0 x
XAUTOCLAIM g grp erin 0 0 FOO
XAUTOCLAIM g nogrp erin 0 0
XAUTOCLAIM g grp erin 0 (18446744073709551615-18446744073709551615
XPENDING g grp
XPENDING g grp x
XPENDING g grp - + x
XPENDING g grp IDLE x - + 1
XPENDING g grp IDLE 5 - +
XPENDING nokey grp
XPENDING g nogrp
XINFO GROUPS g
XGROUP CREATECONSUMER g grp zed
XGROUP CREATECONSUMER g grp zed
XGROUP DELCONSUMER g grp erin
XGROUP DELCONSUMER g grp nobody
XPENDING g grp
XGROUP SETID g grp 0 ENTRIESREAD 0
XGROUP SETID g grp 0 FOO 5
XGROUP SETID g grp 0 ENTRIESREAD x
XGROUP SETID g nogrp 0
XGROUP SETID nokey grp 0
XREADGROUP GROUP grp zed NOACK COUNT 2 STREAMS g >
XINFO GROUPS g
XGROUP SETID g grp 3-0 ENTRIESREAD 2
XINFO GROUPS g
XGROUP CREATE g late $
XGROUP CREATE g mid 4-0 ENTRIESREAD 3
XINFO GROUPS g
XGROUP DESTROY g grp
XGROUP DESTROY g grp
XGROUP HELP
XGROUP FOO
XGROUP CREATE g
XREADGROUP GROUP grp c STREAMS g >
XREADGROUP GROUP late c STREAMS g $
XREADGROUP GROUP late c STREAMS g x
XREADGROUP GROUP late c STREAMS g g >
XREADGROUP COUNT 1 COUNT 1 STREAMS g >
XREAD GROUP late c STREAMS g 0
XREAD NOACK STREAMS g 0
XREAD STREAMS g >
XREAD BLOCK x STREAMS g 0
XREAD BLOCK -1 STREAMS g 0
XREAD COUNT x STREAMS g 0
XREAD FOO STREAMS g 0
XREAD STREAMS g
XREAD STREAMS g g 0
XREAD COUNT 1 STREAMS g s nokey 0 0 0
XREAD STREAMS g s $ $
XREAD BLOCK 10 STREAMS g nokey $ $
XREAD STREAMS g 4-0
XREAD COUNT STREAMS g 0
XREAD BLOCK
XREAD STREAMS
XREAD COUNT -5 STREAMS g 0
XREAD BLOCK 1 BLOCK x STREAMS g 0
XREAD NOACK FOO STREAMS g 0
XREADGROUP GROUP grp STREAMS g >
XREADGROUP GROUP grp c NOACK NOACK FOO
XREADGROUP STREAMS g >
XREADGROUP GROUP grp c COUNT x BLOCK -1 STREAMS g >
FAILOVER TIMEOUT 5 TIMEOUT 5
FAILOVER FORCE FORCE
FAILOVER TO localhost 1 TO localhost 2
FAILOVER TO localhost x
FAILOVER TIMEOUT 0
FAILOVER TIMEOUT x
FAILOVER TO localhost
FAILOVER FOO
FAILOVER TO localhost 70000 TIMEOUT 10
# an emptied stream
DEL e
XGROUP CREATE e grp $ MKSTREAM
XINFO STREAM e
XRANGE e - +
XREAD STREAMS e 0
XREADGROUP GROUP grp c STREAMS e >
XREADGROUP GROUP grp c STREAMS e 0
XADD e 1-0 a 1
XDEL e 1-0
XINFO STREAM e
XINFO GROUPS e
XADD e MAXLEN 0 2-0 a 1
XLEN e
EXISTS e
# wrong type
SET str x
XADD str 1-0 a b
XLEN str
XRANGE str - +
XREVRANGE str + -
XDEL str 1-0
XTRIM str MAXLEN 0
XREAD STREAMS str 0
XREADGROUP GROUP g c STREAMS str >
XGROUP CREATE str g $
XACK str g 1-0
XPENDING str g
XCLAIM str g c 0 1-0
XAUTOCLAIM str g c 0 0
XINFO STREAM str
XINFO GROUPS str
XSETID str 1-0
TYPE g
OBJECT ENCODING g


# ---------------------------------------------------------------- lists
flushall
rpush l a b c d a b c 1 2 3
lpush l x y
lrange l 0 -1
lrange l -3 -1
lrange l 5 2
lrange l -100 100
lrange nokey 0 -1
lrange l 0 x
llen l
llen nokey
lindex l 0
lindex l -1
lindex l 100
lindex nokey x
lindex l x
lpop l
rpop l
lpop l 2
rpop l 2
lpop l 0
lpop nokey
lpop nokey 0
lpop nokey 2
lpop l -1
lpop l abc
lpop l 1 2
rpop l 1 2
lpushx nokey a
rpushx nokey a
exists nokey
lpushx l front
rpushx l back
lrange l 0 -1
lset l 0 first
lset l -1 last
lset l 100 x
lset nokey 0 x
lset l x x
linsert l before a new
linsert l AFTER d new2
linsert l before zz x
linsert nokey before a x
linsert l middle a x
lrange l 0 -1
lrem l 1 new
lrem l -1 a
lrem l 0 b
lrem l 0 zz
lrem nokey 0 a
lrem l x a
lrange l 0 -1
ltrim l 1 -2
lrange l 0 -1
ltrim l a b
ltrim nokey 0 1
ltrim l 5 1
exists l
rpush l a b c d 1 2 3 4 3 3 3
lpos l 3
lpos l zz
lpos l 3 count 0
lpos l 3 count 2
lpos l 3 rank 2
lpos l 3 rank -1
lpos l 3 rank -2 count 2
lpos l 3 rank 9
lpos l 3 count 0 maxlen 7
lpos l 3 rank -1 maxlen 1
lpos l 3 rank -9223372036854775808
lpos l 3 rank 9223372036854775807
lpos l zz count 5
lpos nokey a
lpos nokey a count 1
lpos l a rank 0
lpos l a count -1
lpos l a count x
lpos l a maxlen -1
lpos l a rank x
lpos l a rank
lpos l a foo 1
rpush src a b c
lmove src dst left right
lmove src dst RIGHT LEFT
rpoplpush src dst
exists src
lrange dst 0 -1
lmove src dst left left
rpoplpush dst dst
lmove dst dst left right
lrange dst 0 -1
lmove dst dst up left
rpush m1 1 2 3 4
lmpop 2 nokey m1 left
lmpop 2 nokey m1 right count 2
lmpop 1 m1 left count 10
lmpop 1 m1 left
lmpop 0 l left
lmpop -1 l left
lmpop abc l left
lmpop 3 l left
lmpop 1 l middle
lmpop 1 l left count 0
lmpop 1 l left count -1
lmpop 1 l left count
lmpop 1 l left count 1 count 2
rpush b1 x y
blpop nokey b1 0
brpop nokey b1 0
exists b1
rpush b1 1 2 3
blmpop 0 2 nokey b1 right count 2
blmove b1 bd left right 0
brpoplpush nokey bd 0.01
blpop nokey 0.01
brpop nokey 0.01
blmove nokey bd left left 0.01
blmpop 0.01 1 nokey left
blpop b1 -1
blpop b1 abc
blmove b1 bd up left 0
blmove b1 bd left left x
blmpop 0 0 b1 left
blmpop x 1 b1 left
blmpop 0 1 b1 left count 0
set str x
lpush str a
rpushx str a
lpop str
llen str
lrange str 0 1
lindex str 0
lset str 0 a
lrem str 0 a
ltrim str 0 1
linsert str before a b
lpos str a
lmove str dst left left
lmove dst str left left
lmpop 2 nokey str left
blpop nokey str 0
blmove str dst left left 0
object encoding dst
type dst
config set list-max-listpack-size 2
rpush small 1 2 3 4 5 6 7
linsert small after 4 x
lset small 2 longer-value-than-before
lrem small 0 6
lrange small 0 -1
lindex small -2
object encoding small
config set list-max-listpack-size -2

# ---------------------------------------------------------------- hashes
flushall
hset h
hset h a
hset h a 1 b
hmset h a 1 b
hset h a 1 b 2
hset h a 10 c 3
hmset h d 4 e 5
hget h a
hget h zz
hget nokey a
hmget h a zz c
hmget nokey a b
hgetall h
hkeys h
hvals h
hgetall nokey
hkeys nokey
hlen h
hlen nokey
hexists h a
hexists h zz
hstrlen h a
hstrlen h zz
hsetnx h a 99
hsetnx h f 6
hdel h a zz b
hdel nokey a
hdel h c d e f
exists h
hincrby h n 5
hincrby h n -7
hincrby h n x
hset h s hello sp " 1" max 9223372036854775807 min -9223372036854775808
hincrby h s 1
hincrby h sp 1
hincrby h max 1
hincrby h min -1
hincrbyfloat h f 0.1
hincrbyfloat h f 0.2
hincrbyfloat h f -0.3
hincrbyfloat h g 10.5
hincrbyfloat h g 0.1
hincrbyfloat h g 5.0e3
hincrbyfloat fl g 1e308
hincrbyfloat fl g -1e308
hincrbyfloat fl g 1
object encoding fl
hincrbyfloat h big 1.23e20
hincrbyfloat h big 1e30
hincrbyfloat h hex 0x1p4
hincrbyfloat h n 1.5
hincrbyfloat h s 1
hincrbyfloat h sp 1
hincrbyfloat h f x
hincrbyfloat h f inf
hincrbyfloat h f nan
hset h i inf
hincrbyfloat h i 1
hincrbyfloat nokey f inf
exists nokey
hstrlen h max
hstrlen h big
hgetall h
hrandfield nokey
hrandfield nokey 5
hrandfield nokey x
hrandfield nokey 1 foo
hrandfield nokey 1 withvalues x
hrandfield nokey -9223372036854775808
hrandfield nokey -4611686018427387904 withvalues
hset one f v
hrandfield one
hrandfield one 0
hrandfield one 5
hrandfield one -3
hrandfield one 2 withvalues
hrandfield one -2 WITHVALUES
hscan fl 0
hscan nokey 0
hscan nokey abc
hscan nokey 0 count 0
hscan h abc
hscan h 0 count 0
hscan h 0 count x
hscan h 0 type string
hscan h 0 match
hscan h 18446744073709551616
hscan h 0 match *i*
hscan h -1 match m?x
hscan h "" count 1
hscan h +0 match b*
config set hash-max-listpack-entries 4
config set hash-max-listpack-value 8
hset e a 1 b 2 c 3 d 4
object encoding e
hset e e 5
object encoding e
hdel e a b c d
object encoding e
hset v f 12345678
object encoding v
hset v f 123456789
object encoding v
hsetnx n 123456789 v
object encoding n
hincrbyfloat x f 1234567.5
object encoding x
hincrby y longfieldname 1
object encoding y
~hgetall v
~hkeys e
config set hash-max-listpack-entries 128
config set hash-max-listpack-value 64
set str x
hset str a 1
hsetnx str a 1
hget str a
hmget str a
hgetall str
hdel str a
hlen str
hstrlen str a
hincrby str a 1
hincrbyfloat str a 1
hrandfield str
hrandfield str 2
hscan str 0
lpush h x
type h


# ---------------------------------------------------------------- GEO
DEL geo geo:dst geo:d2 geo:str geo:small
GEOADD geo 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
GEOADD geo 2.352222 48.856613 Paris -0.127758 51.507351 London 13.404954 52.520008 Berlin
GEOADD geo -74.005974 40.712776 NewYork -118.243683 34.052235 LosAngeles 139.691711 35.689487 Tokyo
GEOADD geo 151.209290 -33.868820 Sydney -58.381592 -34.603722 BuenosAires 18.424055 -33.924870 CapeTown
GEOADD geo 179.999 -16.5 FijiEast -179.999 -16.5 FijiWest 180 0 Antimeridian -180 0 AntimeridianWest
GEOADD geo 0 85.05112878 NorthEdge 0 -85.05112878 SouthEdge 25.0 84.9 NearNorth -60.0 -84.95 NearSouth
GEOADD geo 2.352222 48.856613 ParisTwin 2.352222 48.856613 ParisTriplet
GEOADD geo NX 2.3 48.8 Paris 2.29 48.85 Eiffel
GEOPOS geo Paris Eiffel
GEOADD geo XX 2.29 48.85 NotThere 2.2945 48.8584 Eiffel
GEOADD geo XX CH 2.2945 48.8584 Eiffel 2.2946 48.8584 Eiffel
GEOADD geo CH 2.2945 48.8584 Eiffel
GEOADD geo ch nx 2.2945 48.8584 Eiffel 1 1 NewOne
GEOADD geo NX XX 1 1 x
GEOADD geo GT 1 1 x
GEOADD geo 1 1
GEOADD geo 1 1 a 2
GEOADD geo ch
GEOADD geo 181 0 x
GEOADD geo -180.0001 0 x
GEOADD geo 0 85.06 x
GEOADD geo 0 -90 x
GEOADD geo 1e300 0 x
GEOADD geo abc 0 x
GEOADD geo 0 abc x
GEOADD geo " 1" 0 x
GEOADD geo 1 1 ok 200 0 bad
EXISTS ok
GEOADD geo inf 0 x
GEOADD geo nan 0 x
ZCARD geo
ZSCORE geo Palermo
ZSCORE geo Antimeridian
GEOPOS geo Palermo Catania NoSuch
GEOPOS geo NorthEdge SouthEdge Antimeridian AntimeridianWest FijiEast FijiWest
GEOPOS geo
GEOPOS nokey a b
GEOHASH geo Palermo Catania Sydney NorthEdge SouthEdge Antimeridian NoSuch
GEOHASH geo
GEOHASH nokey a
GEODIST geo Palermo Catania
GEODIST geo Palermo Catania m
GEODIST geo Palermo Catania KM
GEODIST geo Palermo Catania ft
GEODIST geo Palermo Catania Mi
GEODIST geo Paris ParisTwin
GEODIST geo FijiEast FijiWest km
GEODIST geo NorthEdge SouthEdge km
GEODIST geo Antimeridian AntimeridianWest
GEODIST geo Palermo NoSuch
GEODIST nokey Palermo Catania
GEODIST geo Palermo Catania furlong
GEODIST nokey a b furlong
GEODIST geo Palermo Catania km extra
GEODIST geo Palermo
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km ASC
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km DESC WITHDIST
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km WITHCOORD WITHDIST WITHHASH
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km WITHDIST
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km ASC WITHDIST
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km DESC WITHDIST WITHHASH
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km COUNT 2
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km COUNT 2 DESC
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km COUNT 2 ANY
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km COUNT 3 ANY ASC WITHDIST
GEOSEARCH geo FROMMEMBER Paris BYRADIUS 10 km COUNT 100 WITHDIST
GEOSEARCH geo FROMMEMBER Paris BYBOX 20 20 km WITHDIST
GEOSEARCH geo FROMMEMBER Paris BYBOX 1000 200 km ASC
GEOSEARCH geo FROMMEMBER Paris BYBOX 200 1000 km ASC
GEOSEARCH geo FROMLONLAT 0 0 BYRADIUS 20000 km
GEOSEARCH geo FROMLONLAT 0 0 BYRADIUS 20000 km COUNT 5 DESC WITHDIST
GEOSEARCH geo FROMLONLAT 0 0 BYBOX 40000 40000 km COUNT 5 WITHDIST
GEOSEARCH geo FROMLONLAT 180 0 BYRADIUS 300 km WITHCOORD
GEOSEARCH geo FROMLONLAT -180 -16.5 BYRADIUS 50 km WITHDIST
GEOSEARCH geo FROMMEMBER FijiEast BYBOX 100 100 km WITHDIST
GEOSEARCH geo FROMLONLAT 0 85 BYRADIUS 1000 km WITHDIST
GEOSEARCH geo FROMLONLAT 100 85 BYRADIUS 2000 km ASC WITHDIST
GEOSEARCH geo FROMMEMBER SouthEdge BYRADIUS 3000 km ASC WITHDIST
GEOSEARCH geo FROMMEMBER Palermo BYRADIUS 0 m WITHDIST
GEOSEARCH geo FROMMEMBER Palermo BYBOX 0 0 m
GEOSEARCH geo FROMMEMBER Palermo BYRADIUS 1 ft
GEOSEARCH geo FROMMEMBER Palermo BYRADIUS 120 mi WITHDIST
GEOSEARCH geo frommember Palermo byradius 500000 ft asc withdist
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 KM count 1 withcoord
GEOSEARCH nokey FROMLONLAT 15 37 BYRADIUS 200 km
GEOSEARCH nokey FROMMEMBER x BYRADIUS 200 km
GEOSEARCH geo FROMMEMBER NoSuch BYRADIUS 200 km
GEOSEARCH geo BYRADIUS 200 km FROMMEMBER Palermo
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km ANY
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km COUNT 0
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km COUNT -3
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km COUNT x
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km COUNT
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS -1 km
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS x km
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 parsecs
GEOSEARCH geo FROMLONLAT 15 37 BYBOX x 1 km
GEOSEARCH geo FROMLONLAT 15 37 BYBOX 1 x km
GEOSEARCH geo FROMLONLAT 15 37 BYBOX -1 1 km
GEOSEARCH geo FROMLONLAT 15 37 BYBOX 1 1 parsecs
GEOSEARCH geo FROMLONLAT 15 37 BYBOX 1 km
GEOSEARCH geo FROMLONLAT 200 37 BYRADIUS 200 km
GEOSEARCH geo FROMLONLAT 15 x BYRADIUS 200 km
GEOSEARCH geo FROMLONLAT 15 37 WITHDIST
GEOSEARCH geo BYRADIUS 200 km WITHDIST
GEOSEARCH geo FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 200 km
GEOSEARCH geo FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 200 km
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km BYBOX 1 1 km
GEOSEARCH geo FROMLONLAT 15 37 BYBOX 1 1 km BYRADIUS 200 km
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km STORE geo:dst
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST
GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km FOO
GEOSEARCH geo FROMLONLAT 15 37
GEOSEARCHSTORE geo:dst geo FROMLONLAT 15 37 BYRADIUS 200 km
ZRANGE geo:dst 0 -1 WITHSCORES
GEOSEARCHSTORE geo:dst geo FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST
ZRANGE geo:dst 0 -1 WITHSCORES
GEOSEARCHSTORE geo:dst geo FROMMEMBER Paris BYBOX 20 20 km COUNT 2 DESC STOREDIST
ZRANGE geo:dst 0 -1 WITHSCORES
GEOSEARCHSTORE geo:dst geo FROMMEMBER Paris BYRADIUS 10 km COUNT 2 ANY
ZRANGE geo:dst 0 -1 WITHSCORES
OBJECT ENCODING geo:dst
GEOSEARCHSTORE geo:dst geo FROMLONLAT 0 0 BYRADIUS 20000 km
ZCARD geo:dst
GEOSEARCHSTORE geo:dst geo FROMLONLAT 50 50 BYRADIUS 1 m
EXISTS geo:dst
GEOSEARCHSTORE geo:dst nokey FROMLONLAT 50 50 BYRADIUS 1 m
GEOSEARCHSTORE geo:dst geo FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST
GEOSEARCHSTORE geo:dst geo FROMLONLAT 15 37 BYRADIUS 200 km WITHCOORD
GEOSEARCHSTORE geo:dst geo FROMLONLAT 15 37 BYRADIUS 200 km STORE x
GEOSEARCHSTORE geo:dst geo FROMLONLAT 15 37
GEOSEARCHSTORE geo:dst geo BYRADIUS 200 km STOREDIST
GEOSEARCHSTORE geo:dst geo FROMMEMBER NoSuch BYRADIUS 200 km
GEORADIUS geo 15 37 200 km
GEORADIUS geo 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC
GEORADIUS geo 15 37 200 km COUNT 1 WITHDIST
GEORADIUS geo 15 37 200 km COUNT 1 ANY
GEORADIUS geo 2.35 48.85 10 km DESC
GEORADIUS geo 15 37 200 km STORE geo:dst
ZRANGE geo:dst 0 -1 WITHSCORES
GEORADIUS geo 15 37 200 km STOREDIST geo:dst
ZRANGE geo:dst 0 -1 WITHSCORES
GEORADIUS geo 15 37 200 km STORE geo:dst STOREDIST geo:d2
EXISTS geo:dst geo:d2
ZRANGE geo:d2 0 -1 WITHSCORES
GEORADIUS geo 15 37 200 km STORE geo:dst WITHDIST
GEORADIUS geo 15 37 200 km STORE geo:d2 STORE geo:dst
EXISTS geo:dst geo:d2
ZRANGE geo:dst 0 -1 WITHSCORES
GEORADIUS geo 15 37 200 km STORE
GEORADIUS geo 200 37 200 km
GEORADIUS geo 15 37 -200 km
GEORADIUS geo 15 37 200 lightyears
GEORADIUS geo 15 37 200 km FROMMEMBER Palermo
GEORADIUS geo 15 37 200 km BYRADIUS 1 km
GEORADIUS nokey 15 37 200 km
GEORADIUS nokey 15 37 200 km STORE geo:dst
GEORADIUS nokey 200 37 200 km
GEORADIUS_RO geo 15 37 200 km WITHDIST
GEORADIUS_RO geo 15 37 200 km STORE geo:dst
GEORADIUS_RO geo 15 37 200 km STOREDIST geo:dst
GEORADIUSBYMEMBER geo Palermo 200 km WITHDIST
GEORADIUSBYMEMBER geo Paris 10 km ASC COUNT 3 WITHCOORD
GEORADIUSBYMEMBER geo Paris 10 km STORE geo:dst
ZRANGE geo:dst 0 -1 WITHSCORES
GEORADIUSBYMEMBER geo NoSuch 10 km
GEORADIUSBYMEMBER geo Paris -10 km
GEORADIUSBYMEMBER geo Paris 10 parsecs
GEORADIUSBYMEMBER nokey Paris -10 parsecs
GEORADIUSBYMEMBER nokey Paris 10 km COUNT 0
GEORADIUSBYMEMBER nokey Paris 10 km STORE geo:dst
GEORADIUSBYMEMBER_RO geo Paris 10 km WITHDIST
GEORADIUSBYMEMBER_RO geo Paris 10 km STORE geo:dst
SET geo:str x
GEOADD geo:str 1 1 a
GEOADD geo:str 200 1 a
GEOPOS geo:str a
GEOHASH geo:str a
GEODIST geo:str a b
GEODIST geo:str a b parsecs
GEOSEARCH geo:str FROMLONLAT 1 1 BYRADIUS 1 km
GEOSEARCH geo:str FROMLONLAT 1 1
GEOSEARCHSTORE geo:dst geo:str FROMLONLAT 1 1 BYRADIUS 1 km
GEORADIUS geo:str 1 1 1 km
GEORADIUSBYMEMBER geo:str a 1 km
GEOSEARCHSTORE geo:str geo FROMLONLAT 15 37 BYRADIUS 200 km
TYPE geo:str
ZADD geo:small -1 neg 1.5 frac 1e20 huge 9007199254740992 big
GEOPOS geo:small neg frac huge big
GEOHASH geo:small neg frac huge big
GEODIST geo:small neg big
GEOSEARCH geo:small FROMMEMBER frac BYRADIUS 1 km WITHHASH WITHCOORD
GEOADD
GEOPOS
GEOHASH
GEODIST geo a
GEOSEARCH geo FROMLONLAT 1
GEOSEARCHSTORE geo:dst geo FROMLONLAT 1 1
GEORADIUS geo 1 1 1
GEORADIUSBYMEMBER geo a 1
DEL geo geo:dst geo:d2 geo:str geo:small

# ---------------------------------------------------------- HyperLogLog
FLUSHALL
PFADD hll a b c d e f g
PFADD hll a b c
PFADD hll
GET hll
PFCOUNT hll
GET hll
PFCOUNT hll
PFADD hll h
GET hll
PFADD hll ""
PFADD fresh
GET fresh
PFCOUNT fresh
OBJECT ENCODING hll
PFCOUNT nokey
PFCOUNT nokey nokey2
PFCOUNT hll fresh nokey
PFCOUNT hll hll
EXISTS nokey
PFDEBUG ENCODING hll
PFDEBUG DECODE hll
PFDEBUG decode fresh
PFDEBUG GETREG nokey
PFDEBUG NOSUCH nokey
PFDEBUG NOSUCH hll
PFDEBUG "bad\x00name" hll
PFDEBUG
PFDEBUG GETREG
PFDEBUG GETREG hll extra
PFADD
PFCOUNT
PFMERGE
PFSELFTEST x
PFADD big e0 e1 e2 e3 e4 e5 e6 e7 e8 e9 e10 e11 e12 e13 e14 e15 e16 e17 e18 e19 e20 e21 e22 e23 e24 e25 e26 e27 e28 e29 e30 e31 e32 e33 e34 e35 e36 e37 e38 e39 e40 e41 e42 e43 e44 e45 e46 e47 e48 e49 e50 e51 e52 e53 e54 e55 e56 e57 e58 e59 e60 e61 e62 e63 e64 e65 e66 e67 e68 e69 e70 e71 e72 e73 e74 e75 e76 e77 e78 e79 e80 e81 e82 e83 e84 e85 e86 e87 e88 e89 e90 e91 e92 e93 e94 e95 e96 e97 e98 e99
PFADD big e100 e101 e102 e103 e104 e105 e106 e107 e108 e109 e110 e111 e112 e113 e114 e115 e116 e117 e118 e119 e120 e121 e122 e123 e124 e125 e126 e127 e128 e129 e130 e131 e132 e133 e134 e135 e136 e137 e138 e139 e140 e141 e142 e143 e144 e145 e146 e147 e148 e149 e150 e151 e152 e153 e154 e155 e156 e157 e158 e159 e160 e161 e162 e163 e164 e165 e166 e167 e168 e169 e170 e171 e172 e173 e174 e175 e176 e177 e178 e179 e180 e181 e182 e183 e184 e185 e186 e187 e188 e189 e190 e191 e192 e193 e194 e195 e196 e197 e198 e199
PFADD big e200 e201 e202 e203 e204 e205 e206 e207 e208 e209 e210 e211 e212 e213 e214 e215 e216 e217 e218 e219 e220 e221 e222 e223 e224 e225 e226 e227 e228 e229 e230 e231 e232 e233 e234 e235 e236 e237 e238 e239 e240 e241 e242 e243 e244 e245 e246 e247 e248 e249 e250 e251 e252 e253 e254 e255 e256 e257 e258 e259 e260 e261 e262 e263 e264 e265 e266 e267 e268 e269 e270 e271 e272 e273 e274 e275 e276 e277 e278 e279 e280 e281 e282 e283 e284 e285 e286 e287 e288 e289 e290 e291 e292 e293 e294 e295 e296 e297 e298 e299
PFADD big e300 e301 e302 e303 e304 e305 e306 e307 e308 e309 e310 e311 e312 e313 e314 e315 e316 e317 e318 e319 e320 e321 e322 e323 e324 e325 e326 e327 e328 e329 e330 e331 e332 e333 e334 e335 e336 e337 e338 e339 e340 e341 e342 e343 e344 e345 e346 e347 e348 e349 e350 e351 e352 e353 e354 e355 e356 e357 e358 e359 e360 e361 e362 e363 e364 e365 e366 e367 e368 e369 e370 e371 e372 e373 e374 e375 e376 e377 e378 e379 e380 e381 e382 e383 e384 e385 e386 e387 e388 e389 e390 e391 e392 e393 e394 e395 e396 e397 e398 e399
PFADD big e400 e401 e402 e403 e404 e405 e406 e407 e408 e409 e410 e411 e412 e413 e414 e415 e416 e417 e418 e419 e420 e421 e422 e423 e424 e425 e426 e427 e428 e429 e430 e431 e432 e433 e434 e435 e436 e437 e438 e439 e440 e441 e442 e443 e444 e445 e446 e447 e448 e449 e450 e451 e452 e453 e454 e455 e456 e457 e458 e459 e460 e461 e462 e463 e464 e465 e466 e467 e468 e469 e470 e471 e472 e473 e474 e475 e476 e477 e478 e479 e480 e481 e482 e483 e484 e485 e486 e487 e488 e489 e490 e491 e492 e493 e494 e495 e496 e497 e498 e499
PFADD big e500 e501 e502 e503 e504 e505 e506 e507 e508 e509 e510 e511 e512 e513 e514 e515 e516 e517 e518 e519 e520 e521 e522 e523 e524 e525 e526 e527 e528 e529 e530 e531 e532 e533 e534 e535 e536 e537 e538 e539 e540 e541 e542 e543 e544 e545 e546 e547 e548 e549 e550 e551 e552 e553 e554 e555 e556 e557 e558 e559 e560 e561 e562 e563 e564 e565 e566 e567 e568 e569 e570 e571 e572 e573 e574 e575 e576 e577 e578 e579 e580 e581 e582 e583 e584 e585 e586 e587 e588 e589 e590 e591 e592 e593 e594 e595 e596 e597 e598 e599
PFADD big e600 e601 e602 e603 e604 e605 e606 e607 e608 e609 e610 e611 e612 e613 e614 e615 e616 e617 e618 e619 e620 e621 e622 e623 e624 e625 e626 e627 e628 e629 e630 e631 e632 e633 e634 e635 e636 e637 e638 e639 e640 e641 e642 e643 e644 e645 e646 e647 e648 e649 e650 e651 e652 e653 e654 e655 e656 e657 e658 e659 e660 e661 e662 e663 e664 e665 e666 e667 e668 e669 e670 e671 e672 e673 e674 e675 e676 e677 e678 e679 e680 e681 e682 e683 e684 e685 e686 e687 e688 e689 e690 e691 e692 e693 e694 e695 e696 e697 e698 e699
PFADD big e700 e701 e702 e703 e704 e705 e706 e707 e708 e709 e710 e711 e712 e713 e714 e715 e716 e717 e718 e719 e720 e721 e722 e723 e724 e725 e726 e727 e728 e729 e730 e731 e732 e733 e734 e735 e736 e737 e738 e739 e740 e741 e742 e743 e744 e745 e746 e747 e748 e749 e750 e751 e752 e753 e754 e755 e756 e757 e758 e759 e760 e761 e762 e763 e764 e765 e766 e767 e768 e769 e770 e771 e772 e773 e774 e775 e776 e777 e778 e779 e780 e781 e782 e783 e784 e785 e786 e787 e788 e789 e790 e791 e792 e793 e794 e795 e796 e797 e798 e799
PFADD big e800 e801 e802 e803 e804 e805 e806 e807 e808 e809 e810 e811 e812 e813 e814 e815 e816 e817 e818 e819 e820 e821 e822 e823 e824 e825 e826 e827 e828 e829 e830 e831 e832 e833 e834 e835 e836 e837 e838 e839 e840 e841 e842 e843 e844 e845 e846 e847 e848 e849 e850 e851 e852 e853 e854 e855 e856 e857 e858 e859 e860 e861 e862 e863 e864 e865 e866 e867 e868 e869 e870 e871 e872 e873 e874 e875 e876 e877 e878 e879 e880 e881 e882 e883 e884 e885 e886 e887 e888 e889 e890 e891 e892 e893 e894 e895 e896 e897 e898 e899
PFADD big e900 e901 e902 e903 e904 e905 e906 e907 e908 e909 e910 e911 e912 e913 e914 e915 e916 e917 e918 e919 e920 e921 e922 e923 e924 e925 e926 e927 e928 e929 e930 e931 e932 e933 e934 e935 e936 e937 e938 e939 e940 e941 e942 e943 e944 e945 e946 e947 e948 e949 e950 e951 e952 e953 e954 e955 e956 e957 e958 e959 e960 e961 e962 e963 e964 e965 e966 e967 e968 e969 e970 e971 e972 e973 e974 e975 e976 e977 e978 e979 e980 e981 e982 e983 e984 e985 e986 e987 e988 e989 e990 e991 e992 e993 e994 e995 e996 e997 e998 e999
PFCOUNT big
GET big
STRLEN big
PFDEBUG ENCODING big
PFDEBUG DECODE big
PFCOUNT big hll
PFMERGE union big hll fresh nokey
GET union
PFCOUNT union
PFMERGE onlydest
GET onlydest
EXISTS onlydest
PFMERGE hll
GET hll
PFMERGE hll big
PFCOUNT hll
GET hll
CONFIG GET hll-sparse-max-bytes
CONFIG SET hll-sparse-max-bytes 1kb
CONFIG GET hll-sparse-max-bytes
CONFIG SET hll-sparse-max-bytes -1
CONFIG SET hll-sparse-max-bytes abc
PFADD small s0 s1 s2 s3 s4 s5 s6 s7 s8 s9 s10 s11 s12 s13 s14 s15 s16 s17 s18 s19 s20 s21 s22 s23 s24 s25 s26 s27 s28 s29 s30 s31 s32 s33 s34 s35 s36 s37 s38 s39 s40 s41 s42 s43 s44 s45 s46 s47 s48 s49 s50 s51 s52 s53 s54 s55 s56 s57 s58 s59 s60 s61 s62 s63 s64 s65 s66 s67 s68 s69 s70 s71 s72 s73 s74 s75 s76 s77 s78 s79 s80 s81 s82 s83 s84 s85 s86 s87 s88 s89 s90 s91 s92 s93 s94 s95 s96 s97 s98 s99 s100 s101 s102 s103 s104 s105 s106 s107 s108 s109 s110 s111 s112 s113 s114 s115 s116 s117 s118 s119 s120 s121 s122 s123 s124 s125 s126 s127 s128 s129 s130 s131 s132 s133 s134 s135 s136 s137 s138 s139 s140 s141 s142 s143 s144 s145 s146 s147 s148 s149 s150 s151 s152 s153 s154 s155 s156 s157 s158 s159 s160 s161 s162 s163 s164 s165 s166 s167 s168 s169 s170 s171 s172 s173 s174 s175 s176 s177 s178 s179 s180 s181 s182 s183 s184 s185 s186 s187 s188 s189 s190 s191 s192 s193 s194 s195 s196 s197 s198 s199
PFDEBUG ENCODING small
PFADD small s200 s201 s202 s203 s204 s205 s206 s207 s208 s209 s210 s211 s212 s213 s214 s215 s216 s217 s218 s219 s220 s221 s222 s223 s224 s225 s226 s227 s228 s229 s230 s231 s232 s233 s234 s235 s236 s237 s238 s239 s240 s241 s242 s243 s244 s245 s246 s247 s248 s249 s250 s251 s252 s253 s254 s255 s256 s257 s258 s259 s260 s261 s262 s263 s264 s265 s266 s267 s268 s269 s270 s271 s272 s273 s274 s275 s276 s277 s278 s279 s280 s281 s282 s283 s284 s285 s286 s287 s288 s289 s290 s291 s292 s293 s294 s295 s296 s297 s298 s299 s300 s301 s302 s303 s304 s305 s306 s307 s308 s309 s310 s311 s312 s313 s314 s315 s316 s317 s318 s319 s320 s321 s322 s323 s324 s325 s326 s327 s328 s329 s330 s331 s332 s333 s334 s335 s336 s337 s338 s339 s340 s341 s342 s343 s344 s345 s346 s347 s348 s349 s350 s351 s352 s353 s354 s355 s356 s357 s358 s359 s360 s361 s362 s363 s364 s365 s366 s367 s368 s369 s370 s371 s372 s373 s374 s375 s376 s377 s378 s379 s380 s381 s382 s383 s384 s385 s386 s387 s388 s389 s390 s391 s392 s393 s394 s395 s396 s397 s398 s399
PFDEBUG ENCODING small
PFADD small s400 s401 s402 s403 s404 s405 s406 s407 s408 s409 s410 s411 s412 s413 s414 s415 s416 s417 s418 s419 s420 s421 s422 s423 s424 s425 s426 s427 s428 s429 s430 s431 s432 s433 s434 s435 s436 s437 s438 s439 s440 s441 s442 s443 s444 s445 s446 s447 s448 s449 s450 s451 s452 s453 s454 s455 s456 s457 s458 s459 s460 s461 s462 s463 s464 s465 s466 s467 s468 s469 s470 s471 s472 s473 s474 s475 s476 s477 s478 s479 s480 s481 s482 s483 s484 s485 s486 s487 s488 s489 s490 s491 s492 s493 s494 s495 s496 s497 s498 s499 s500 s501 s502 s503 s504 s505 s506 s507 s508 s509 s510 s511 s512 s513 s514 s515 s516 s517 s518 s519 s520 s521 s522 s523 s524 s525 s526 s527 s528 s529 s530 s531 s532 s533 s534 s535 s536 s537 s538 s539 s540 s541 s542 s543 s544 s545 s546 s547 s548 s549 s550 s551 s552 s553 s554 s555 s556 s557 s558 s559 s560 s561 s562 s563 s564 s565 s566 s567 s568 s569 s570 s571 s572 s573 s574 s575 s576 s577 s578 s579 s580 s581 s582 s583 s584 s585 s586 s587 s588 s589 s590 s591 s592 s593 s594 s595 s596 s597 s598 s599
PFDEBUG ENCODING small
GET small
PFCOUNT small
GET small
PFCOUNT small big
PFMERGE union small
PFDEBUG ENCODING union
GET union
PFMERGE sparseunion fresh
PFMERGE sparseunion2 hll
PFDEBUG ENCODING sparseunion2
CONFIG SET hll-sparse-max-bytes 3000
PFADD promo p0 p1 p2 p3 p4 p5 p6 p7 p8 p9 p10 p11 p12 p13 p14 p15 p16 p17 p18 p19 p20 p21 p22 p23 p24 p25 p26 p27 p28 p29 p30 p31 p32 p33 p34 p35 p36 p37 p38 p39 p40 p41 p42 p43 p44 p45 p46 p47 p48 p49 p50 p51 p52 p53 p54 p55 p56 p57 p58 p59 p60 p61 p62 p63 p64 p65 p66 p67 p68 p69 p70 p71 p72 p73 p74 p75 p76 p77 p78 p79 p80 p81 p82 p83 p84 p85 p86 p87 p88 p89 p90 p91 p92 p93 p94 p95 p96 p97 p98 p99 p100 p101 p102 p103 p104 p105 p106 p107 p108 p109 p110 p111 p112 p113 p114 p115 p116 p117 p118 p119 p120 p121 p122 p123 p124 p125 p126 p127 p128 p129 p130 p131 p132 p133 p134 p135 p136 p137 p138 p139 p140 p141 p142 p143 p144 p145 p146 p147 p148 p149
PFDEBUG ENCODING promo
PFDEBUG TODENSE promo
PFDEBUG TODENSE promo
PFDEBUG ENCODING promo
PFDEBUG DECODE promo
GET promo
PFADD promo2 p0 p1 p2 p3 p4 p5 p6 p7 p8 p9 p10 p11 p12 p13 p14 p15 p16 p17 p18 p19 p20 p21 p22 p23 p24 p25 p26 p27 p28 p29 p30 p31 p32 p33 p34 p35 p36 p37 p38 p39 p40 p41 p42 p43 p44 p45 p46 p47 p48 p49 p50 p51 p52 p53 p54 p55 p56 p57 p58 p59 p60 p61 p62 p63 p64 p65 p66 p67 p68 p69 p70 p71 p72 p73 p74 p75 p76 p77 p78 p79 p80 p81 p82 p83 p84 p85 p86 p87 p88 p89 p90 p91 p92 p93 p94 p95 p96 p97 p98 p99 p100 p101 p102 p103 p104 p105 p106 p107 p108 p109 p110 p111 p112 p113 p114 p115 p116 p117 p118 p119 p120 p121 p122 p123 p124 p125 p126 p127 p128 p129 p130 p131 p132 p133 p134 p135 p136 p137 p138 p139 p140 p141 p142 p143 p144 p145 p146 p147 p148 p149
PFDEBUG GETREG promo2
PFDEBUG ENCODING promo2
GET promo2
PFDEBUG GETREG big
PFCOUNT big promo promo2 small
PFADD big e0 e1 e2 zz1 zz2
PFCOUNT big
GET big
SET cached "HYLL\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x7f\xff"
PFCOUNT cached
OBJECT ENCODING cached
PFCOUNT cached fresh
PFADD cached a
PFCOUNT cached
GET cached
SET str foo
PFADD str a
PFCOUNT str
PFCOUNT str hll
PFCOUNT hll str
PFMERGE str
PFMERGE dst str
PFMERGE str hll
PFDEBUG ENCODING str
EXISTS dst
SET int 12345
PFADD int a
PFCOUNT int
SET short HYLL
PFCOUNT short
RPUSH list a
PFADD list a
PFCOUNT list
PFCOUNT hll list
PFMERGE list hll
PFMERGE hll list
PFDEBUG GETREG list
PFADD c1 a b c
APPEND c1 "hello"
PFCOUNT c1
PFCOUNT c1 hll
PFMERGE c1m c1
EXISTS c1m
PFDEBUG DECODE c1
PFDEBUG GETREG c1
PFDEBUG TODENSE c1
PFADD c1 x y z
GET c1
PFADD c2 a b c
SETRANGE c2 0 "0123"
PFCOUNT c2
PFADD c2 a
PFADD c3 a b c
SETRANGE c3 4 "x"
PFCOUNT c3
PFADD c4 a b c
SETRANGE c4 4 "\x00"
PFCOUNT c4
PFMERGE c4m c4
SET c5 "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"
PFCOUNT c5
PFADD c5 a
PFDEBUG DECODE c5
PFMERGE c5m c5
SET c6 "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f"
PFCOUNT c6
PFDEBUG DECODE c6
PFADD c6 a
GET c6
SET c7 "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x7f\xff\xfc"
PFCOUNT c7
PFCOUNT c7 c7
PFADD c7 a b c
GET c7
PFDEBUG TODENSE c7
SET c8 "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe\xfc"
PFCOUNT c8
PFCOUNT c8 c8
PFDEBUG DECODE c8
PFADD c8 a b c d e f
GET c8
SET c9 "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe\x3f"
PFCOUNT c9
PFMERGE c9m c9
PFADD c9 a
GET c9


# ------------------------------------------------------- DUMP RESTORE MIGRATE
FLUSHALL
DUMP nokey
DUMP
DUMP a b
SET ds hello
SET di 12345
SET dneg -123456
SET dbig 12345678901
SET dlong xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
SET dempty ""
RPUSH dl a b c 1 2 -300 70000 4294967296
LPUSH dl2 x y z
RPUSH dbigl element-000- element-001-x element-002-xx element-003-xxx element-004-xxxx element-005-xxxxx element-006-xxxxxx element-007-xxxxxxx element-008-xxxxxxxx element-009-xxxxxxxxx element-010-xxxxxxxxxx element-011-xxxxxxxxxxx element-012-xxxxxxxxxxxx element-013-xxxxxxxxxxxxx element-014-xxxxxxxxxxxxxx element-015-xxxxxxxxxxxxxxx element-016-xxxxxxxxxxxxxxxx element-017-xxxxxxxxxxxxxxxxx element-018-xxxxxxxxxxxxxxxxxx element-019-xxxxxxxxxxxxxxxxxxx element-020-xxxxxxxxxxxxxxxxxxxx element-021-xxxxxxxxxxxxxxxxxxxxx element-022-xxxxxxxxxxxxxxxxxxxxxx element-023-xxxxxxxxxxxxxxxxxxxxxxx element-024-xxxxxxxxxxxxxxxxxxxxxxxx element-025-xxxxxxxxxxxxxxxxxxxxxxxxx element-026-xxxxxxxxxxxxxxxxxxxxxxxxxx element-027-xxxxxxxxxxxxxxxxxxxxxxxxxxx element-028-xxxxxxxxxxxxxxxxxxxxxxxxxxxx element-029-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-030-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-031-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-032-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-033-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-034-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-035-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-036-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-037-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-038-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-039-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-040-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-041-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-042-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-043-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-044-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-045-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-046-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-047-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-048-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-049-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-050-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-051-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-052-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-053-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-054-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-055-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-056-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-057-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-058-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-059-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-060- element-061-x element-062-xx element-063-xxx element-064-xxxx element-065-xxxxx element-066-xxxxxx element-067-xxxxxxx element-068-xxxxxxxx element-069-xxxxxxxxx element-070-xxxxxxxxxx element-071-xxxxxxxxxxx element-072-xxxxxxxxxxxx element-073-xxxxxxxxxxxxx element-074-xxxxxxxxxxxxxx element-075-xxxxxxxxxxxxxxx element-076-xxxxxxxxxxxxxxxx element-077-xxxxxxxxxxxxxxxxx element-078-xxxxxxxxxxxxxxxxxx element-079-xxxxxxxxxxxxxxxxxxx element-080-xxxxxxxxxxxxxxxxxxxx element-081-xxxxxxxxxxxxxxxxxxxxx element-082-xxxxxxxxxxxxxxxxxxxxxx element-083-xxxxxxxxxxxxxxxxxxxxxxx element-084-xxxxxxxxxxxxxxxxxxxxxxxx element-085-xxxxxxxxxxxxxxxxxxxxxxxxx element-086-xxxxxxxxxxxxxxxxxxxxxxxxxx element-087-xxxxxxxxxxxxxxxxxxxxxxxxxxx element-088-xxxxxxxxxxxxxxxxxxxxxxxxxxxx element-089-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-090-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-091-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-092-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-093-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-094-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-095-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-096-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-097-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-098-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-099-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-100-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-101-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-102-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-103-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-104-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-105-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-106-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-107-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-108-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-109-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-110-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-111-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-112-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-113-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-114-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-115-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-116-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-117-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-118-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-119-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-120- element-121-x element-122-xx element-123-xxx element-124-xxxx element-125-xxxxx element-126-xxxxxx element-127-xxxxxxx element-128-xxxxxxxx element-129-xxxxxxxxx element-130-xxxxxxxxxx element-131-xxxxxxxxxxx element-132-xxxxxxxxxxxx element-133-xxxxxxxxxxxxx element-134-xxxxxxxxxxxxxx element-135-xxxxxxxxxxxxxxx element-136-xxxxxxxxxxxxxxxx element-137-xxxxxxxxxxxxxxxxx element-138-xxxxxxxxxxxxxxxxxx element-139-xxxxxxxxxxxxxxxxxxx element-140-xxxxxxxxxxxxxxxxxxxx element-141-xxxxxxxxxxxxxxxxxxxxx element-142-xxxxxxxxxxxxxxxxxxxxxx element-143-xxxxxxxxxxxxxxxxxxxxxxx element-144-xxxxxxxxxxxxxxxxxxxxxxxx element-145-xxxxxxxxxxxxxxxxxxxxxxxxx element-146-xxxxxxxxxxxxxxxxxxxxxxxxxx element-147-xxxxxxxxxxxxxxxxxxxxxxxxxxx element-148-xxxxxxxxxxxxxxxxxxxxxxxxxxxx element-149-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-150-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-151-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-152-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-153-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-154-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-155-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-156-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-157-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-158-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-159-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-160-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-161-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-162-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-163-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-164-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-165-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-166-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-167-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-168-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-169-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-170-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-171-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-172-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-173-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-174-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-175-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-176-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-177-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-178-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-179-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-180- element-181-x element-182-xx element-183-xxx element-184-xxxx element-185-xxxxx element-186-xxxxxx element-187-xxxxxxx element-188-xxxxxxxx element-189-xxxxxxxxx element-190-xxxxxxxxxx element-191-xxxxxxxxxxx element-192-xxxxxxxxxxxx element-193-xxxxxxxxxxxxx element-194-xxxxxxxxxxxxxx element-195-xxxxxxxxxxxxxxx element-196-xxxxxxxxxxxxxxxx element-197-xxxxxxxxxxxxxxxxx element-198-xxxxxxxxxxxxxxxxxx element-199-xxxxxxxxxxxxxxxxxxx element-200-xxxxxxxxxxxxxxxxxxxx element-201-xxxxxxxxxxxxxxxxxxxxx element-202-xxxxxxxxxxxxxxxxxxxxxx element-203-xxxxxxxxxxxxxxxxxxxxxxx element-204-xxxxxxxxxxxxxxxxxxxxxxxx element-205-xxxxxxxxxxxxxxxxxxxxxxxxx element-206-xxxxxxxxxxxxxxxxxxxxxxxxxx element-207-xxxxxxxxxxxxxxxxxxxxxxxxxxx element-208-xxxxxxxxxxxxxxxxxxxxxxxxxxxx element-209-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-210-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-211-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-212-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-213-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-214-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-215-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-216-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-217-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-218-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-219-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-220-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-221-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-222-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-223-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-224-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-225-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-226-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-227-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-228-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-229-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-230-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-231-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-232-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-233-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-234-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-235-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-236-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-237-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-238-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-239-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-240- element-241-x element-242-xx element-243-xxx element-244-xxxx element-245-xxxxx element-246-xxxxxx element-247-xxxxxxx element-248-xxxxxxxx element-249-xxxxxxxxx element-250-xxxxxxxxxx element-251-xxxxxxxxxxx element-252-xxxxxxxxxxxx element-253-xxxxxxxxxxxxx element-254-xxxxxxxxxxxxxx element-255-xxxxxxxxxxxxxxx element-256-xxxxxxxxxxxxxxxx element-257-xxxxxxxxxxxxxxxxx element-258-xxxxxxxxxxxxxxxxxx element-259-xxxxxxxxxxxxxxxxxxx element-260-xxxxxxxxxxxxxxxxxxxx element-261-xxxxxxxxxxxxxxxxxxxxx element-262-xxxxxxxxxxxxxxxxxxxxxx element-263-xxxxxxxxxxxxxxxxxxxxxxx element-264-xxxxxxxxxxxxxxxxxxxxxxxx element-265-xxxxxxxxxxxxxxxxxxxxxxxxx element-266-xxxxxxxxxxxxxxxxxxxxxxxxxx element-267-xxxxxxxxxxxxxxxxxxxxxxxxxxx element-268-xxxxxxxxxxxxxxxxxxxxxxxxxxxx element-269-xxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-270-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-271-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-272-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-273-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-274-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-275-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-276-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-277-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-278-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-279-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-280-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-281-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-282-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-283-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-284-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-285-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-286-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-287-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-288-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-289-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-290-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-291-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-292-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-293-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-294-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-295-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-296-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-297-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-298-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx element-299-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
SADD dis 1 2 3 -5
SADD dis64 1 99999999999
HSET dh f v g 1 h 2.5
ZADD dz 1 a 2.5 b -inf c 0.1 d 1e300 e -0 f
ZADD dbigz 0.0 member:0 0.25 member:1 0.5 member:2 0.75 member:3 1.0 member:4 1.25 member:5 1.5 member:6 1.75 member:7 2.0 member:8 2.25 member:9 2.5 member:10 2.75 member:11 3.0 member:12 3.25 member:13 3.5 member:14 3.75 member:15 4.0 member:16 4.25 member:17 4.5 member:18 4.75 member:19 5.0 member:20 5.25 member:21 5.5 member:22 5.75 member:23 6.0 member:24 6.25 member:25 6.5 member:26 6.75 member:27 7.0 member:28 7.25 member:29 7.5 member:30 7.75 member:31 8.0 member:32 8.25 member:33 8.5 member:34 8.75 member:35 9.0 member:36 9.25 member:37 9.5 member:38 9.75 member:39 10.0 member:40 10.25 member:41 10.5 member:42 10.75 member:43 11.0 member:44 11.25 member:45 11.5 member:46 11.75 member:47 12.0 member:48 12.25 member:49 12.5 member:50 12.75 member:51 13.0 member:52 13.25 member:53 13.5 member:54 13.75 member:55 14.0 member:56 14.25 member:57 14.5 member:58 14.75 member:59 15.0 member:60 15.25 member:61 15.5 member:62 15.75 member:63 16.0 member:64 16.25 member:65 16.5 member:66 16.75 member:67 17.0 member:68 17.25 member:69 17.5 member:70 17.75 member:71 18.0 member:72 18.25 member:73 18.5 member:74 18.75 member:75 19.0 member:76 19.25 member:77 19.5 member:78 19.75 member:79 20.0 member:80 20.25 member:81 20.5 member:82 20.75 member:83 21.0 member:84 21.25 member:85 21.5 member:86 21.75 member:87 22.0 member:88 22.25 member:89 22.5 member:90 22.75 member:91 23.0 member:92 23.25 member:93 23.5 member:94 23.75 member:95 24.0 member:96 24.25 member:97 24.5 member:98 24.75 member:99 25.0 member:100 25.25 member:101 25.5 member:102 25.75 member:103 26.0 member:104 26.25 member:105 26.5 member:106 26.75 member:107 27.0 member:108 27.25 member:109 27.5 member:110 27.75 member:111 28.0 member:112 28.25 member:113 28.5 member:114 28.75 member:115 29.0 member:116 29.25 member:117 29.5 member:118 29.75 member:119 30.0 member:120 30.25 member:121 30.5 member:122 30.75 member:123 31.0 member:124 31.25 member:125 31.5 member:126 31.75 member:127 32.0 member:128 32.25 member:129 32.5 member:130 32.75 member:131 33.0 member:132 33.25 member:133 33.5 member:134 33.75 member:135 34.0 member:136 34.25 member:137 34.5 member:138 34.75 member:139
XADD dst 1-1 a 1 b 2
XADD dst 2-1 a 3 b 4
XADD dst 3-1 c 5
XDEL dst 2-1
XGROUP CREATE dst g 0
DUMP ds
DUMP di
DUMP dneg
DUMP dbig
DUMP dlong
DUMP dempty
DUMP dl
DUMP dl2
DUMP dbigl
DUMP dis
DUMP dis64
DUMP dh
DUMP dz
DUMP dbigz
DUMP dst
RESTORE r 0 "\x00\x05hello\n\x00cr\xdfve4 \n" REPLACE
GET r
DUMP r
RESTORE r 0 "\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9" REPLACE
GET r
OBJECT ENCODING r
DUMP r
RESTORE r 0 "\x00\x0b12345678901\n\x000NR\xd7'\x17e\x10" REPLACE
GET r
DUMP r
RESTORE r 0 "\x00\xc3\t@d\x01xx\xe0W\x00\x01xx\n\x00]\xb7\xf6c\xbb\x08b_" REPLACE
GET r
DUMP r
RESTORE r 0 "\x00\x00\n\x00]\x9b\\@\x0f\x7f\xa2\xda" REPLACE
GET r
STRLEN r
DUMP r
RESTORE r 0 "\x12\x01\x02&&\x00\x00\x00\x08\x00\x81a\x02\x81b\x02\x81c\x02\x01\x01\x02\x01\xde\xd4\x02\xf2p\x11\x01\x04\xf4\x00\x00\x00\x00\x01\x00\x00\x00\t\xff\n\x00<V;\xd7Vv$\xd5" REPLACE
LRANGE r 0 -1
DUMP r
RESTORE r 0 "\x12\x01\x02\x10\x10\x00\x00\x00\x03\x00\x81z\x02\x81y\x02\x81x\x02\xff\n\x00\x11\x93H\x07-\x12\xab3" REPLACE
LRANGE r 0 -1
DUMP r
RESTORE r 0 "\x12\x02\x02\xc3Gz_\xf0\x14\xf0\x1f\x00\x00\xc3\x00\x8celement-000-\r\x8d\xe0\x01\r\x041-x\x0e\x8e\xe0\x01\x0e\x052-xx\x0f\x8f\xe0\x01\x0f\x003 \x0f\x02x\x10\x90\xe0\x01\x10\x004@\x10\x02x\x11\x91\xe0\x01\x11\x005`\x11\x02x\x12\x92\xe0\x01\x12\x006\x80\x12\x02x\x13\x93\xe0\x01\x13\x007\xa0\x13\x02x\x14\x94\xe0\x01\x14\x008\xc0\x14\x02x\x15\x95\xe0\x01\x15\x009\xe0\x00\x15\x02x\x16\x96\xe0\x00\x16\x0110\xe0\x01\x16\x02x\x17\x97\xe0\x01\x17 \xc2\xe0\x01\x00\x01\x18\x98\xe0\x01\x18@\xcc\xe0\x01\x00\x01\x19\x99\xe0\x01\x19`\xd6\xe0\x01\x00\x01\x1a\x9a\xe0\x01\x1a\x80\xe0\xe0\x01\x00\x01\x1b\x9b\xe0\x01\x1b\xa0\xea\xe0\x01\x00\x01\x1c\x9c\xe0\x01\x1c\xc0\xf4\xe0\x01\x00\x01\x1d\x9d\xe0\x01\x1d\xe0\x00\xfe\xe0\x01\x00\x01\x1e\x9e\xe0\x01\x1e\xe1\x01\x08\xe0\x01\x00\x01\x1f\x9f\xe0\x01\x1f\xe1\x02\x12\xe0\x01\x00\x01 \xa0\xe0\x00 \x002\xe1\x03\x1c\xe0\x01\x00\x01!\xa1\xe0\x01!\xe1\x04&\xe0\x01\x00\x01\"\xa2\xe0\x01\"\xe1\x050\xe0\x01\x00\x01#\xa3\xe0\x01#\xe1\x06:\xe0\x01\x00\x01$\xa4\xe0\x01$\xe1\x07D\xe0\x01\x00\x01%\xa5\xe0\x01%\xe1\x08N\xe0\x01\x00\x01&\xa6\xe0\x01&\xe1\tX\xe0\x01\x00\x01'\xa7\xe0\x01'\xe1\nb\xe0\x01\x00\x01(\xa8\xe0\x01(\xe1\x0bl\xe0\x01\x00\x01)\xa9\xe0\x01)\xe1\x0cv\xe0\x01\x00\x01*\xaa\xe0\x00*\x003\xe1\r\x80\xe0\x01\x00\x01+\xab\xe0\x01+\xe1\x0e\x8a\xe0\x01\x00\x01,\xac\xe0\x01,\xe1\x0f\x94\xe0\x01\x00\x01-\xad\xe0\x01-\xe1\x10\x9e\xe0\x01\x00\x01.\xae\xe0\x01.\xe1\x11\xa8\xe0\x01\x00\x01/\xaf\xe0\x01/\xe1\x12\xb2\xe0\x01\x00\x010\xb0\xe0\x010\xe1\x13\xbc\xe0\x01\x00\x011\xb1\xe0\x011\xe1\x14\xc6\xe0\x01\x00\x012\xb2\xe0\x012\xe1\x15\xd0\xe0\x01\x00\x013\xb3\xe0\x013\xe1\x16\xda\xe0\x01\x00\x014\xb4\xe0\x004\x004\xe1\x17\xe4\xe0\x01\x00\x015\xb5\xe0\x015\xe1\x18\xee\xe0\x01\x00\x016\xb6\xe0\x016\xe1\x19\xf8\xe0\x01\x00\x017\xb7\xe0\x017\xe2\x1a\x02\xe0\x01\x00\x018\xb8\xe0\x018\xe2\x1b\x0c\xe0\x01\x00\x019\xb9\xe0\x019\xe2\x1c\x16\xe0\x01\x00\x01:\xba\xe0\x01:\xe2\x1d \xe0\x01\x00\x01;\xbb\xe0\x01;\xe2\x1e*\xe0\x01\x00\x01<\xbc\xe0\x01<\xe2\x1f4\xe0\x01\x00\x01=\xbd\xe0\x01=\xe2 >\xe0\x01\x00\x01>\xbe\xe0\x00>\x005\xe2!H\xe0\x01\x00\x01?\xbf\xe0\x01?\xe2\"R\xe0\x01\x00\x02@\xe0@\xe0\x01A\xe2#]\xe0\x01\x00\x02B\xe0A\xe0\x01B\xe2$h\xe0\x01\x00\x02C\xe0B\xe0\x01C\xe2%s\xe0\x01\x00\x02D\xe0C\xe0\x01D\xe2&~\xe0\x01\x00\x02E\xe0D\xe0\x01E\xe2'\x89\xe0\x01\x00\x02F\xe0E\xe0\x01F\xe2(\x94\xe0\x01\x00\x02G\xe0F\xe0\x01G\xe2)\x9f\xe0\x01\x00\x02H\xe0G\xe0\x01H\xe2*\xaa\xe0\x01\x00\x00I\xea\x019\x006\xea\x049\x006\"\x82\xea\x029\x006BO\xea\x029\x006b\x1c\xea\x029\x006\x81\xe9\xea\x029\x006\xa1\xb6\xea\x029\x006\xc1\x83\xea\x029\x006\xe1\x00P\xea\x029\x006\xe1\x01\x1d\xea\x029\x006\xe0\x02\xea\xea\x029\x007\xe3\x03m\xea\x029\x007 \xc2\xe0\x01\x00\xea\x029\x007@\xcc\xe0\x01\x00\xea\x029\x007`\xd6\xe0\x01\x00\xea\x029\x007\x80\xe0\xe0\x01\x00\xea\x029\x007\xa0\xea\xe0\x01\x00\xea\x029\x007\xc0\xf4\xe0\x01\x00\xea\x029\x007\xe0\x00\xfe\xe0\x01\x00\xea\x029\x007\xe1\x01\x08\xe0\x01\x00\xea\x029\x007\xe1\x02\x12\xe0\x01\x00\xea\x029\x008\xe1\x03\x1c\xe0\x01\x00\xea\x029\x008\xe1\x04&\xe0\x01\x00\xea\x029\x008\xe1\x050\xe0\x01\x00\xea\x029\x008\xe1\x06:\xe0\x01\x00\xea\x029\x008\xe1\x07D\xe0\x01\x00\xea\x029\x008\xe1\x08N\xe0\x01\x00\xea\x029\x008\xe1\tX\xe0\x01\x00\xea\x029\x008\xe1\nb\xe0\x01\x00\xea\x029\x008\xe1\x0bl\xe0\x01\x00\xea\x029\x008\xe1\x0cv\xe0\x01\x00\xea\x029\x009\xe1\r\x80\xe0\x01\x00\xea\x029\x009\xe1\x0e\x8a\xe0\x01\x00\xea\x029\x009\xe1\x0f\x94\xe0\x01\x00\xea\x029\x009\xe1\x10\x9e\xe0\x01\x00\xea\x029\x009\xe1\x11\xa8\xe0\x01\x00\xea\x029\x009\xe1\x12\xb2\xe0\x01\x00\xea\x029\x009\xe1\x13\xbc\xe0\x01\x00\xea\x029\x009\xe1\x14\xc6\xe0\x01\x00\xea\x029\x009\xe1\x15\xd0\xe0\x01\x00\xea\x029\x009\xe1\x16\xda\xe0\x01\x00\xea\x019\x001/u\xe0\x01\x17\xe0\x15\x00\xea\x019\x001O\x9d\xe0\x1f\x00\xea\x019\x001o\xc5\xe0\x1f\x00\xea\x019\x001\x8f\xed\xe0\x1f\x00\xea\x019\x001\xb0\x15\xe0\x1f\x00\xea\x019\x001\xd0=\xe0\x1f\x00\xea\x019\x001\xf0\x00e\xe0\x1f\x00\xea\x019\x001\xf0\x01\x8d\xe0\x1f\x00\xea\x019\x001\xf0\x02\xb5\xe0\x1f\x00\xea\x019\x001\xf0\x03\xdd\xe0\x1f\x00\xea\x019\x001\xf1\x04\x05\xe0\x1f\x00\xea\x019\x001\xf1\x05-\xe0\x1f\x00\xea\x029\x001\xf1\x06V\xe0\x1f\x00\xea\x029\x001\xf1\x07\x7f\xe0\x1f\x00\xea\x029\x001\xf1\x08\xa8\xe0\x1f\x00\xea\x029\x001\xf1\t\xd1\xe0\x1f\x00\xea\x029\x001\xf1\n\xfa\xe0\x1f\x00\xea\x029\x001\xf2\x0b#\xe0\x1f\x00\xea\x029\x001\xf2\x0cL\xe0\x1f\x00\xea\x029\x001\xf2\ru\xe0\x1f\x00\xea\x019\x0012\x9d\xf4\x01s\x001R\x89\xea\x019\x001ru\xea\x019\x001\x92a\xea\x019\x001\xb2M\xea\x019\x001\xd29\xea\x019\x001\xf2\x00%\xea\x019\x001\xf2\x01\x11\xea\x019\x001\xf1\x02\xfd\xea\x019\x001\xf1\x03\xe9\xea\x019\x001\xf1\x04\xd5\xea\x019\x001\xf1\x05\xc1\xea\x019\x001\xf1\x06\xad\xea\x019\x001\xf1\x07\x99\xea\x019\x001\xf1\x08\x85\xea\x019\x001\xf1\tq\xea\x019\x001\xf1\n]\xea\x019\x0113\xe7\n\x0f\xea\x019\x001\xf1\x0c5\xea\x019\x001\xf1\r!\xea\x019\x001\xf1\x0e\r\xea\x019\x001\xf0\x0f\xf9\xea\x019\x001\xf0\x10\xe5\xea\x019\x001\xf0\x11\xd1\xea\x019\x001\xf0\x12\xbd\xea\x019\x001\xf0\x13\xa9\xea\x019\x001\xf0\x14\x95\xea\x019\x001\xf0\x15\x81\xea\x019\x001\xf0\x16m\xea\x019\x001\xf0\x17Y\xea\x019\x001\xf0\x18E\xea\x019\x001\xf0\x191\xea\x019\x001\xf0\x1a\x1c\xea\x019\x001\xf0\x1b\x07\xea\x019\x001\xef\x1c\xf2\xea\x019\x001\xef\x1d\xdd\xea\x019\x001\xef\x1e\xc8\xea\x019\x001\xef\x1f\xb3\xea\x019\x001\xef \x9e\xea\x019\x001\xef!\x89\xea\x029/u\xe5\x1fq\xea\x029O\x9d\xe0\x1f\x00\xea\x029o\xc5\xe0\x1f\x00\xea\x029\x8f\xed\xe0\x1f\x00\xea\x029\xb0\x15\xe0\x1f\x00\xea\x029\xd0=\xe0\x1f\x00\xea\x029\xf0\x00e\xe0\x1f\x00\xea\x029\xf0\x01\x8d\xe0\x1f\x00\xea\x029\xf0\x02\xb5\xe0\x1f\x00\xea\x029\xf0\x03\xdd\xe0\x1f\x00\xea\x029\xf1\x04\x05\xe0\x1f\x00\xea\x029\xf1\x05-\xe0\x1f\x00\xea\x039\xf1\x06V\xe0\x1f\x00\xea\x039\xf1\x07\x7f\xe0\x1f\x00\xea\x039\xf1\x08\xa8\xe0\x1f\x00\xea\x039\xf1\t\xd1\xe0\x1f\x00\xea\x039\xf1\n\xfa\xe0\x1f\x00\xea\x039\xf2\x0b#\xe0\x1f\x00\xea\x039\xf2\x0cL\xe0\x1f\x00\xea\x039\xf2\ru\xe0\x1f\x00\xea\x0292\x9d\xea\x029R\x89\xea\x029ru\xea\x029\x92a\xea\x029\xb2M\xea\x029\xd29\xea\x029\xf2\x00%\xea\x029\xf2\x01\x11\xea\x029\xf1\x02\xfd\xea\x029\xf1\x03\xe9\xea\x029\xf1\x04\xd5\xea\x029\xf1\x05\xc1\xea\x029\xf1\x06\xad\xea\x029\xf1\x07\x99\xea\x029\xf1\x08\x85\x01\x1b\xff\x02\xc3D\xafS@\x13@\x13\x00\x00i\x00\x9belement-195-x\xe0\x05\x00\x01\x1c\x9c\xe0\x01\x1c\x006\xe0\x07\x1c\x02x\x1d\x9d\xe0\x01\x1d\x007\xe0\x08\x1d\x02x\x1e\x9e\xe0\x01\x1e\x008\xe0\t\x1e\x02x\x1f\x9f\xe0\x01\x1f\x009\xe0\n\x1f\x02x \xa0\xc0 \x02200\xe0\x0b \x02x!\xa1\xe0\x01!\x001\xe0\x0c!\x02x\"\xa2\xe0\x01\"\x002\xe0\r\"\x02x#\xa3\xe0\x01#\x003\xe0\x0e#\x02x$\xa4\xe0\x01$\x004\xe0\x0f$\x02x%\xa5\xe0\x01%\xe1\x08N\xe0\x01\x00\x01&\xa6\xe0\x01&\xe1\tX\xe0\x01\x00\x01'\xa7\xe0\x01'\xe1\nb\xe0\x01\x00\x01(\xa8\xe0\x01(\xe1\x0bl\xe0\x01\x00\x01)\xa9\xe0\x01)\xe1\x0cv\xe0\x01\x00\x01*\xaa\xe0\x00*\x001\xe1\r\x80\xe0\x01\x00\x01+\xab\xe0\x01+\xe1\x0e\x8a\xe0\x01\x00\x01,\xac\xe0\x01,\xe1\x0f\x94\xe0\x01\x00\x01-\xad\xe0\x01-\xe1\x10\x9e\xe0\x01\x00\x01.\xae\xe0\x01.\xe1\x11\xa8\xe0\x01\x00\x01/\xaf\xe0\x01/\xe1\x12\xb2\xe0\x01\x00\x010\xb0\xe0\x010\xe1\x13\xbc\xe0\x01\x00\x011\xb1\xe0\x011\xe1\x14\xc6\xe0\x01\x00\x012\xb2\xe0\x012\xe1\x15\xd0\xe0\x01\x00\x013\xb3\xe0\x013\xe1\x16\xda\xe0\x01\x00\x014\xb4\xe0\x004\x002\xe1\x17\xe4\xe0\x01\x00\x015\xb5\xe0\x015\xe1\x18\xee\xe0\x01\x00\x016\xb6\xe0\x016\xe1\x19\xf8\xe0\x01\x00\x017\xb7\xe0\x017\xe2\x1a\x02\xe0\x01\x00\x018\xb8\xe0\x018\xe2\x1b\x0c\xe0\x01\x00\x019\xb9\xe0\x019\xe2\x1c\x16\xe0\x01\x00\x01:\xba\xe0\x01:\xe2\x1d \xe0\x01\x00\x01;\xbb\xe0\x01;\xe2\x1e*\xe0\x01\x00\x01<\xbc\xe0\x01<\xe2\x1f4\xe0\x01\x00\x01=\xbd\xe0\x01=\xe2 >\xe0\x01\x00\x01>\xbe\xe0\x00>\x003\xe2!H\xe0\x01\x00\x01?\xbf\xe0\x01?\xe2\"R\xe0\x01\x00\x02@\xe0@\xe0\x01A\xe2#]\xe0\x01\x00\x02B\xe0A\xe0\x01B\xe2$h\xe0\x01\x00\x02C\xe0B\xe0\x01C\xe2%s\xe0\x01\x00\x02D\xe0C\xe0\x01D\xe2&~\xe0\x01\x00\x02E\xe0D\xe0\x01E\xe2'\x89\xe0\x01\x00\x02F\xe0E\xe0\x01F\xe2(\x94\xe0\x01\x00\x02G\xe0F\xe0\x01G\xe2)\x9f\xe0\x01\x00\x02H\xe0G\xe0\x01H\xe2*\xaa\xe0\x01\x00\x01I\x8c\xe0\x00H\x0440-\r\x8d\xe0\x01\r\"\x82\x01\x0e\x8e\xe0\x01\x0eBO\x01\x0f\x8f\xe0\x01\x0fb\x1c\x01\x10\x90\xe0\x01\x10\x81\xe9\x01\x11\x91\xe0\x01\x11\xa1\xb6\x01\x12\x92\xe0\x01\x12\xc1\x83\x01\x13\x93\xe0\x01\x13\xe1\x00P\x01\x14\x94\xe0\x01\x14\xe1\x01\x1d\x01\x15\x95\xe0\x01\x15\xe0\x02\xea\x01\x16\x96\xe0\x00\x16\x005\xe3\x03m\x01\x17\x97\xe0\x01\x17 \xc2\xe0\x01\x00\x01\x18\x98\xe0\x01\x18@\xcc\xe0\x01\x00\x01\x19\x99\xe0\x01\x19`\xd6\xe0\x01\x00\x01\x1a\x9a\xe0\x01\x1a\x80\xe0\xe0\x01\x00\x00\x1b\xea\x009\x0125\xa0\xea\xe0\x01\x00\xea\x019\x0125\xc0\xf4\xe0\x01\x00\xea\x019\x0125\xe0\x00\xfe\xe0\x01\x00\xea\x019\x0125\xe1\x01\x08\xe0\x01\x00\xea\x019\x0125\xe1\x02\x12\xe0\x01\x00\xea\x029\x006\xe1\x03\x1c\xe0\x01\x00\xea\x029\x006\xe1\x04&\xe0\x01\x00\xea\x029\x006\xe1\x050\xe0\x01\x00\xea\x029\x006\xe1\x06:\xe0\x01\x00\xea\x029\x006\xe1\x07D\xe0\x01\x00\xea\x029\x006\xe1\x08N\xe0\x01\x00\xea\x029\x006\xe1\tX\xe0\x01\x00\xea\x029\x006\xe1\nb\xe0\x01\x00\xea\x029\x006\xe1\x0bl\xe0\x01\x00\xea\x029\x006\xe1\x0cv\xe0\x01\x00\xea\x029\x007\xe1\r\x80\xe0\x01\x00\xea\x029\x007\xe1\x0e\x8a\xe0\x01\x00\xea\x029\x007\xe1\x0f\x94\xe0\x01\x00\xea\x029\x007\xe1\x10\x9e\xe0\x01\x00\xea\x029\x007\xe1\x11\xa8\xe0\x01\x00\xea\x029\x007\xe1\x12\xb2\xe0\x01\x00\xea\x029\x007\xe1\x13\xbc\xe0\x01\x00\xea\x029\x007\xe1\x14\xc6\xe0\x01\x00\xea\x029\x007\xe1\x15\xd0\xe0\x01\x00\xea\x029\x007\xe1\x16\xda\xe0\x01\x00\xea\x029\x008\xe1\x17\xe4\xe0\x01\x00\xea\x029\x008\xe1\x18\xee\xe0\x01\x00\xea\x029\x008\xe1\x19\xf8\xe0\x01\x00\xea\x029\x008\xe2\x1a\x02\xe0\x01\x00\xea\x029\x008\xe2\x1b\x0c\xe0\x01\x00\xea\x029\x008\xe2\x1c\x16\xe0\x01\x00\xea\x029\x008\xe2\x1d \xe0\x01\x00\xea\x029\x008\xe2\x1e*\xe0\x01\x00\xea\x029\x008\xe2\x1f4\xe0\x01\x00\xea\x029\x008\xe2 >\xe0\x01\x00\xea\x029\x009\xe2!H\xe0\x01\x00\xea\x029\x009\xe2\"R\xe0\x01\x00\xea\x039\x009\xe2#]\xe0\x01\x00\xea\x039\x009\xe2$h\xe0\x01\x00\xea\x039\x009\xe2%s\xe0\x01\x00\xea\x039\xf1\t\xd1\xe0\x1f\x00\xea\x039\xf1\n\xfa\xe0\x1f\x00\xea\x039\xf2\x0b#\xe0\x1f\x00\xea\x039\xf2\x0cL\xe0\x1f\x00\xea\x039\xf2\ru\xe0\x1f\x00\x01I\xff\n\x00M\xf2o\xc1S\xc5\x05\xdb" REPLACE
LLEN r
LINDEX r 150
OBJECT ENCODING r
DUMP r
RESTORE r 0 "\x0b\x10\x02\x00\x00\x00\x04\x00\x00\x00\xfb\xff\x01\x00\x02\x00\x03\x00\n\x00\xc8\xe4\xdf\xb6os\x96\xf0" REPLACE
SMEMBERS r
OBJECT ENCODING r
DUMP r
RESTORE r 0 "\x0b\x18\x08\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xff\xe7vH\x17\x00\x00\x00\n\x00j\xb1qW\xb9E\x80\xf9" REPLACE
SMEMBERS r
DUMP r
RESTORE r 0 "\x10\x1a\x1a\x00\x00\x00\x06\x00\x81f\x02\x81v\x02\x81g\x02\x01\x01\x81h\x02\x832.5\x04\xff\n\x00\x12\xcfb2\xe2\xf9K\xf3" REPLACE
HGETALL r
OBJECT ENCODING r
DUMP r
RESTORE r 0 "\x11\xc3@C@V\x1bV\x00\x00\x00\x0c\x00\x81c\x02\x84-inf\x05\x81f\x02\x00\x01\x81d\x02\x930.10\xe0\x05\x00\x141\x14\x81a\x02\x01\x01\x81b\x02\x832.5\x04\x81e\x02\x971.\xe0\x05\"\x0801e+300\x18\xff\n\x00\xe9W\xfaN\xab\xe6c`" REPLACE
ZRANGE r 0 -1 WITHSCORES
OBJECT ENCODING r
@DUMP r
RESTORE r 0 "\x05@\x8c\nmember:139\x00\x00\x00\x00\x00`A@\nmember:138\x00\x00\x00\x00\x00@A@\nmember:137\x00\x00\x00\x00\x00 A@\nmember:136\x00\x00\x00\x00\x00\x00A@\nmember:135\x00\x00\x00\x00\x00\xe0@@\nmember:134\x00\x00\x00\x00\x00\xc0@@\nmember:133\x00\x00\x00\x00\x00\xa0@@\nmember:132\x00\x00\x00\x00\x00\x80@@\nmember:131\x00\x00\x00\x00\x00`@@\nmember:130\x00\x00\x00\x00\x00@@@\nmember:129\x00\x00\x00\x00\x00 @@\nmember:128\x00\x00\x00\x00\x00\x00@@\nmember:127\x00\x00\x00\x00\x00\xc0?@\nmember:126\x00\x00\x00\x00\x00\x80?@\nmember:125\x00\x00\x00\x00\x00@?@\nmember:124\x00\x00\x00\x00\x00\x00?@\nmember:123\x00\x00\x00\x00\x00\xc0>@\nmember:122\x00\x00\x00\x00\x00\x80>@\nmember:121\x00\x00\x00\x00\x00@>@\nmember:120\x00\x00\x00\x00\x00\x00>@\nmember:119\x00\x00\x00\x00\x00\xc0=@\nmember:118\x00\x00\x00\x00\x00\x80=@\nmember:117\x00\x00\x00\x00\x00@=@\nmember:116\x00\x00\x00\x00\x00\x00=@\nmember:115\x00\x00\x00\x00\x00\xc0<@\nmember:114\x00\x00\x00\x00\x00\x80<@\nmember:113\x00\x00\x00\x00\x00@<@\nmember:112\x00\x00\x00\x00\x00\x00<@\nmember:111\x00\x00\x00\x00\x00\xc0;@\nmember:110\x00\x00\x00\x00\x00\x80;@\nmember:109\x00\x00\x00\x00\x00@;@\nmember:108\x00\x00\x00\x00\x00\x00;@\nmember:107\x00\x00\x00\x00\x00\xc0:@\nmember:106\x00\x00\x00\x00\x00\x80:@\nmember:105\x00\x00\x00\x00\x00@:@\nmember:104\x00\x00\x00\x00\x00\x00:@\nmember:103\x00\x00\x00\x00\x00\xc09@\nmember:102\x00\x00\x00\x00\x00\x809@\nmember:101\x00\x00\x00\x00\x00@9@\nmember:100\x00\x00\x00\x00\x00\x009@\tmember:99\x00\x00\x00\x00\x00\xc08@\tmember:98\x00\x00\x00\x00\x00\x808@\tmember:97\x00\x00\x00\x00\x00@8@\tmember:96\x00\x00\x00\x00\x00\x008@\tmember:95\x00\x00\x00\x00\x00\xc07@\tmember:94\x00\x00\x00\x00\x00\x807@\tmember:93\x00\x00\x00\x00\x00@7@\tmember:92\x00\x00\x00\x00\x00\x007@\tmember:91\x00\x00\x00\x00\x00\xc06@\tmember:90\x00\x00\x00\x00\x00\x806@\tmember:89\x00\x00\x00\x00\x00@6@\tmember:88\x00\x00\x00\x00\x00\x006@\tmember:87\x00\x00\x00\x00\x00\xc05@\tmember:86\x00\x00\x00\x00\x00\x805@\tmember:85\x00\x00\x00\x00\x00@5@\tmember:84\x00\x00\x00\x00\x00\x005@\tmember:83\x00\x00\x00\x00\x00\xc04@\tmember:82\x00\x00\x00\x00\x00\x804@\tmember:81\x00\x00\x00\x00\x00@4@\tmember:80\x00\x00\x00\x00\x00\x004@\tmember:79\x00\x00\x00\x00\x00\xc03@\tmember:78\x00\x00\x00\x00\x00\x803@\tmember:77\x00\x00\x00\x00\x00@3@\tmember:76\x00\x00\x00\x00\x00\x003@\tmember:75\x00\x00\x00\x00\x00\xc02@\tmember:74\x00\x00\x00\x00\x00\x802@\tmember:73\x00\x00\x00\x00\x00@2@\tmember:72\x00\x00\x00\x00\x00\x002@\tmember:71\x00\x00\x00\x00\x00\xc01@\tmember:70\x00\x00\x00\x00\x00\x801@\tmember:69\x00\x00\x00\x00\x00@1@\tmember:68\x00\x00\x00\x00\x00\x001@\tmember:67\x00\x00\x00\x00\x00\xc00@\tmember:66\x00\x00\x00\x00\x00\x800@\tmember:65\x00\x00\x00\x00\x00@0@\tmember:64\x00\x00\x00\x00\x00\x000@\tmember:63\x00\x00\x00\x00\x00\x80/@\tmember:62\x00\x00\x00\x00\x00\x00/@\tmember:61\x00\x00\x00\x00\x00\x80.@\tmember:60\x00\x00\x00\x00\x00\x00.@\tmember:59\x00\x00\x00\x00\x00\x80-@\tmember:58\x00\x00\x00\x00\x00\x00-@\tmember:57\x00\x00\x00\x00\x00\x80,@\tmember:56\x00\x00\x00\x00\x00\x00,@\tmember:55\x00\x00\x00\x00\x00\x80+@\tmember:54\x00\x00\x00\x00\x00\x00+@\tmember:53\x00\x00\x00\x00\x00\x80*@\tmember:52\x00\x00\x00\x00\x00\x00*@\tmember:51\x00\x00\x00\x00\x00\x80)@\tmember:50\x00\x00\x00\x00\x00\x00)@\tmember:49\x00\x00\x00\x00\x00\x80(@\tmember:48\x00\x00\x00\x00\x00\x00(@\tmember:47\x00\x00\x00\x00\x00\x80'@\tmember:46\x00\x00\x00\x00\x00\x00'@\tmember:45\x00\x00\x00\x00\x00\x80&@\tmember:44\x00\x00\x00\x00\x00\x00&@\tmember:43\x00\x00\x00\x00\x00\x80%@\tmember:42\x00\x00\x00\x00\x00\x00%@\tmember:41\x00\x00\x00\x00\x00\x80$@\tmember:40\x00\x00\x00\x00\x00\x00$@\tmember:39\x00\x00\x00\x00\x00\x80#@\tmember:38\x00\x00\x00\x00\x00\x00#@\tmember:37\x00\x00\x00\x00\x00\x80\"@\tmember:36\x00\x00\x00\x00\x00\x00\"@\tmember:35\x00\x00\x00\x00\x00\x80!@\tmember:34\x00\x00\x00\x00\x00\x00!@\tmember:33\x00\x00\x00\x00\x00\x80 @\tmember:32\x00\x00\x00\x00\x00\x00 @\tmember:31\x00\x00\x00\x00\x00\x00\x1f@\tmember:30\x00\x00\x00\x00\x00\x00\x1e@\tmember:29\x00\x00\x00\x00\x00\x00\x1d@\tmember:28\x00\x00\x00\x00\x00\x00\x1c@\tmember:27\x00\x00\x00\x00\x00\x00\x1b@\tmember:26\x00\x00\x00\x00\x00\x00\x1a@\tmember:25\x00\x00\x00\x00\x00\x00\x19@\tmember:24\x00\x00\x00\x00\x00\x00\x18@\tmember:23\x00\x00\x00\x00\x00\x00\x17@\tmember:22\x00\x00\x00\x00\x00\x00\x16@\tmember:21\x00\x00\x00\x00\x00\x00\x15@\tmember:20\x00\x00\x00\x00\x00\x00\x14@\tmember:19\x00\x00\x00\x00\x00\x00\x13@\tmember:18\x00\x00\x00\x00\x00\x00\x12@\tmember:17\x00\x00\x00\x00\x00\x00\x11@\tmember:16\x00\x00\x00\x00\x00\x00\x10@\tmember:15\x00\x00\x00\x00\x00\x00\x0e@\tmember:14\x00\x00\x00\x00\x00\x00\x0c@\tmember:13\x00\x00\x00\x00\x00\x00\n@\tmember:12\x00\x00\x00\x00\x00\x00\x08@\tmember:11\x00\x00\x00\x00\x00\x00\x06@\tmember:10\x00\x00\x00\x00\x00\x00\x04@\x08member:9\x00\x00\x00\x00\x00\x00\x02@\x08member:8\x00\x00\x00\x00\x00\x00\x00@\x08member:7\x00\x00\x00\x00\x00\x00\xfc?\x08member:6\x00\x00\x00\x00\x00\x00\xf8?\x08member:5\x00\x00\x00\x00\x00\x00\xf4?\x08member:4\x00\x00\x00\x00\x00\x00\xf0?\x08member:3\x00\x00\x00\x00\x00\x00\xe8?\x08member:2\x00\x00\x00\x00\x00\x00\xe0?\x08member:1\x00\x00\x00\x00\x00\x00\xd0?\x08member:0\x00\x00\x00\x00\x00\x00\x00\x00\n\x00R\xe4\x1do\xadj\xddp" REPLACE
ZCARD r
ZRANGE r 0 5 WITHSCORES
OBJECT ENCODING r
DUMP r
RESTORE r 0 "\x13\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\xc37<\x12<\x00\x00\x00\x19\x00\x02\x01\x01\x01\x02\x01\x81a\x02\x81b\x02\x00 \t\x00\x00 \x01@\x11\x02\x05\x01\x03 \x07\x00\x00 \x05\x00\x04 \x0b\x80\x19\t\x01\x01\x81c\x02\x05\x01\x06\x01\xff\x02\x03\x01\x01\x01\x02\x01\x03\x01\x01g\x01\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01zA\xaa\x16\xa2\x01\x00\x00\x01\x01\x05alicezA\xaa\x16\xa2\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\n\x00\xca\xf3E\xa0\xab\x84\x06\xae" REPLACE
XRANGE r - +
XPENDING r g
XINFO GROUPS r
XLEN r
DUMP r
RESTORE r 0 "\x00\x05hello\n\x00cr\xdfve4 \n"
RESTORE r 0 xx
RESTORE r 0 "\x12\x01\x02&&\x00\x00\x00\x08\x00\x81a\x02\x81b\x02\x81c\x02\x01\x01\x02\x01\xde\xd4\x02\xf2p\x11\x01\x04\xf4\x00\x00\x00\x00\x01\x00\x00\x00\t\xff\n\x00<V;\xd7Vv$\xd5" REPLACE
TYPE r
RESTORE rt 100000 "\x00\x05hello\n\x00cr\xdfve4 \n"
TTL rt
RESTORE rt 1 "\x00\x05hello\n\x00cr\xdfve4 \n" REPLACE ABSTTL
EXISTS rt
RESTORE rt 1 "\x00\x05hello\n\x00cr\xdfve4 \n" ABSTTL
EXISTS rt
RESTORE rt 4102444800000 "\x00\x05hello\n\x00cr\xdfve4 \n" ABSTTL
PEXPIRETIME rt
RESTORE rf 0 "\x00\x05hello\n\x00cr\xdfve4 \n" FREQ 100
OBJECT FREQ rf
RESTORE ri 0 "\x00\x05hello\n\x00cr\xdfve4 \n" IDLETIME 0
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" IDLETIME -1
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" FREQ 256
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" FREQ -1
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" IDLETIME 1 FREQ 2
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" FREQ 2 IDLETIME 1
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" IDLETIME
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" FREQ
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" IDLETIME abc
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" FREQ 1.5
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" BOGUS
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \n" REPLACE REPLACE ABSTTL x
RESTORE e -1 "\x00\x05hello\n\x00cr\xdfve4 \n"
RESTORE e abc "\x00\x05hello\n\x00cr\xdfve4 \n"
RESTORE e 0 ""
RESTORE e 0 xx
RESTORE e 0 0123456789
RESTORE e 0 "\x00\x05hdllo\n\x00cr\xdfve4 \n"
RESTORE e 0 "\x00\x05hello\n\x00cr\xdfve4 \x8a"
RESTORE e 0 "\x00\x05hello\x0b\x00\n\xadb\x05\x98\xab\xc9\x83"
RESTORE e 0 "\x00\x05hello\t\x00\xb3\x80\x8e\xba1\xb2C\xbb"
GET e
DEL e
RESTORE e 0 "\x00\x05hello\x00\x00>\xe9\x836jK\x82\xd0"
DEL e
RESTORE e 0 "\x00\x05hello\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"
RESTORE e 0 "\n\x00]\x9b\\@\x0f\x7f\xa2\xda"
RESTORE e 0 "\x00\n\x00]\x9b\\@\x0f\x7f\xa2\xda"
RESTORE e 0 "\x00?\n\x00}4\x91/\xe7\xc6d;"
RESTORE e 0 "\x00\x05hel\n\x00\xd0k\x9f\x97\x04J\xb9z"
GET e
DEL e
RESTORE e 0 "\xff\n\x00\xc9H\x85\x1cr'<\x17"
RESTORE e 0 "\x08\n\x00\xbc\xa6\xbb\xb9\xf9\x05\xbf\xaa"
RESTORE e 0 "\x06\x00\n\x00\xf4d\xf3\x80\xb3d\x0e\x8d"
RESTORE e 0 "\x12\x00\n\x00i\xf6\x84[j\x1b\xbfW"
RESTORE e 0 "\x12\x01\x02\x05abcde\n\x00\x93nL(%\xa8\xb4\x1e"
RESTORE e 0 "\x10\x03abc\n\x00\x838o\xde\xc4y\xe13"
RESTORE e 0 "\x0b\x05\x02\x00\x00\x00\t\n\x00~\xac0\xfa{\x9e\xc9\x99"
RESTORE e 0 "\x03\x01\x01a\x03nan\n\x00D\xf8\x93\x12Ba\x15R"
RESTORE e 0 "\x02\x02\x01a\x01a\n\x00W\xbev/\xc2\xd6R:"
RESTORE e 0 "\x04\x01\x01a\n\x00L\xdb\x9f\xa5\xd7\xf7\xe6r"
RESTORE e 0 "\x11\x80\xff\xff\xff\xff\n\x00\xa5\xdc\x90\x9f\xa4\xe6fI"
RESTORE e 0 "\x00\xc3\x05dabc\n\x00\x059\x8b\x93\x86]x\xfd"
RESTORE e 0 "\x13\x01\x01a\x01b\n\x00Q\xe1\x05\xb6|\x8e\xe0n"
EXISTS e
RESTORE ds 0 xx
RESTORE
RESTORE a b
RESTORE a b c
MIGRATE 127.0.0.1 1 nokey 0 100
MIGRATE 127.0.0.1 1 ds 0 100
EXISTS ds
MIGRATE 127.0.0.1 1 ds 0 100 KEYS a
MIGRATE 127.0.0.1 1 "" 0 100 KEYS nokey1 nokey2
MIGRATE 127.0.0.1 1 "" 0 100 KEYS
MIGRATE 127.0.0.1 1 ds 0 100 AUTH
MIGRATE 127.0.0.1 1 ds 0 100 AUTH2 u
MIGRATE 127.0.0.1 1 ds 0 100 BOGUS
MIGRATE 127.0.0.1 1 ds 0 100 COPY REPLACE BOGUS
MIGRATE 127.0.0.1 1 ds x 100
MIGRATE 127.0.0.1 1 ds 0 x
MIGRATE 127.0.0.1 1 nokey x 100
MIGRATE 127.0.0.1 1 ds 0
FUNCTION FLUSH
FUNCTION DUMP
FUNCTION LOAD "#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)"
FUNCTION DUMP
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf"
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf" REPLACE
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf" replace
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf" APPEND
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf" FLUSH
FUNCTION LIST
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf" BOGUS
FUNCTION RESTORE "\xf5@G#!lua name=dlib\nredis.register_function('dfn', function() return 1 end)\n\x001\t\xbe\x18\xac z\xbf" FLUSH x
FUNCTION RESTORE xx
FUNCTION RESTORE
FUNCTION DUMP x
FUNCTION RESTORE "\x00\x05hello\n\x00cr\xdfve4 \n"
FUNCTION RESTORE "\xf5@G#!lua name=lib2\nredis.register_function('dfn', function() return 2 end)\n\x00\xd0\t\xbf+F\xd3\xf3\xd2"
FUNCTION RESTORE "\xf5@G#!lua name=lib2\nredis.register_function('dfn', function() return 2 end)\n\x00\xd0\t\xbf+F\xd3\xf3\xd2" REPLACE
FUNCTION RESTORE "\xf5@H#!lua name=dlib\nredis.register_function('dfn2', function() return 2 end)\n\x00\xd3F\xc5a`\xcd\xd4\x87" REPLACE
FUNCTION LIST
FUNCTION RESTORE "\xf5@D#!lua name=l3\nredis.register_function('f3', function() return 2 end)\xf5@D#!lua name=l3\nredis.register_function('f4', function() return 2 end)\n\x00\xb1\xabr\x85\x90\xd3x\x08" FLUSH
FUNCTION RESTORE "\xf5@D#!lua name=l3\nredis.register_function('f3', function() return 2 end)\xf5@D#!lua name=l4\nredis.register_function('f3', function() return 2 end)\n\x00L\x86\xa56b\xba\xa9\xe2" FLUSH
FUNCTION RESTORE "\xf5@D#!lua name=l3\nredis.register_function('f3', function() return 2 end)\xf5@D#!lua name=l4\nredis.register_function('F3', function() return 2 end)\n\x00\xd0|\x9epw\xad\x8ba" FLUSH
FUNCTION RESTORE "\xf5\x05#!lua\n\x00\xf9\xc1\xd3\x9f\xfc=\xeaO" FLUSH
FUNCTION RESTORE "\xf6\x05#!lua\n\x00\x15\xdc\xf8\x87\xafZdn" FLUSH
FUNCTION RESTORE "\xf5?#!lua\n\x00Vy\xa2\xc7\x82\x81u\xfb" FLUSH
FUNCTION RESTORE "\xf5\x0bnot a shbng\n\x00\xce\xa3\xae\x8a\xce\x1f#j" FLUSH
FUNCTION LIST
FUNCTION RESTORE "\n\x00]\x9b\\@\x0f\x7f\xa2\xda" FLUSH
FUNCTION LIST
FUNCTION FLUSH
FLUSHALL
# ---------------------------------------------------------------- MODULE
MODULE LIST
MODULE HELP
MODULE LOAD /nonexistent/module.so
MODULE LOADEX /nonexistent/module.so CONFIG a b
MODULE UNLOAD foo
MODULE FOO
MODULE
CONFIG GET enable-module-command
# ---------------------------------------------------------------- SLOWLOG LATENCY
SLOWLOG HELP
slowlog help
SLOWLOG
SLOWLOG FOO
SLOWLOG GET -2
SLOWLOG GET x
SLOWLOG GET 1.5
SLOWLOG GET 1 2
SLOWLOG LEN x
SLOWLOG RESET x
SLOWLOG HELP x
SLOWLOG RESET
LATENCY HELP
LATENCY
LATENCY FOO
LATENCY HELP x
LATENCY LATEST
LATENCY LATEST x
LATENCY HISTORY
LATENCY HISTORY nosuch
LATENCY HISTORY a b
LATENCY GRAPH
LATENCY GRAPH nosuch
LATENCY DOCTOR
LATENCY DOCTOR x
LATENCY RESET
LATENCY RESET nosuch other
# ------------------------------------------ CONFIG: Redis 7.0's full set
# (keel adds cluster-etcd-endpoints, cluster-name and cluster-lease-ttl)
%CONFIG GET cluster-enabled cluster-config-file cluster-port cluster-node-timeout cluster-announce-* cluster-preferred-endpoint-type cluster-require-full-coverage cluster-replica-* cluster-slave-* cluster-migration-barrier cluster-allow-* cluster-link-sendbuf-limit
%CONFIG GET repl-*
%CONFIG GET replica*
%CONFIG GET *slave*
%CONFIG GET min-*
%CONFIG GET *defrag* activerehashing active-expire-effort
%CONFIG GET *cpulist
%CONFIG GET syslog-* supervised io-threads io-threads-do-reads
%CONFIG GET oom-score-adj oom-score-adj-values disable-thp always-show-logo
%CONFIG GET shutdown-* socket-mark-id set-proc-title proc-title-template
%CONFIG GET crash-* jemalloc-bg-thread dynamic-hz ignore-warnings bind-source-addr
%CONFIG GET rdb-* aof-* sanitize-dump-payload propagation-error-behavior
%CONFIG GET masterauth masteruser replicaof slaveof
%CONFIG GET maxmemory-policy maxmemory-policy *policy* maxmemory-p*
CONFIG SET replicaof "127.0.0.1 1"
CONFIG SET slaveof no one
CONFIG SET cluster-enabled yes
CONFIG SET io-threads 2
CONFIG SET supervised no
CONFIG SET socket-mark-id 1
CONFIG SET bgsave_cpulist 0
CONFIG SET active-defrag-cycle-max 100
CONFIG SET active-defrag-threshold-lower -1
CONFIG SET active-defrag-max-scan-fields 0
CONFIG SET active-defrag-ignore-bytes 0
CONFIG SET active-defrag-ignore-bytes -1
CONFIG SET active-expire-effort 11
CONFIG SET repl-timeout 0
CONFIG SET repl-backlog-size 99999999999999999999
CONFIG SET repl-backlog-ttl -1
CONFIG SET cluster-announce-port 65536
CONFIG SET cluster-node-timeout abc
@CONFIG SET activedefrag yes
CONFIG SET activedefrag maybe
CONFIG SET repl-diskless-load never
CONFIG SET cluster-preferred-endpoint-type dns
CONFIG SET propagation-error-behavior panic
%CONFIG GET propagation-error-behavior
CONFIG SET propagation-error-behavior ignore
CONFIG SET oom-score-adj relative
%CONFIG GET oom-score-adj
CONFIG SET oom-score-adj no
CONFIG SET oom-score-adj-values "1 2"
CONFIG SET oom-score-adj-values "0 200 x"
CONFIG SET oom-score-adj-values "-2001 0 0"
CONFIG SET oom-score-adj-values "0 200 800 "
CONFIG SET oom-score-adj-values "100 50 0"
%CONFIG GET oom-score-adj-values
CONFIG SET oom-score-adj-values "0 200 800"
CONFIG SET shutdown-on-sigint "save now"
%CONFIG GET shutdown-on-sigint
CONFIG SET shutdown-on-sigint "nosave save"
CONFIG SET shutdown-on-sigint "now force nosave"
%CONFIG GET shutdown-on-sigint
CONFIG SET shutdown-on-sigint "default SAVE"
%CONFIG GET shutdown-on-sigint
CONFIG SET shutdown-on-sigint ""
CONFIG SET shutdown-on-sigint later
CONFIG SET shutdown-on-sigint default
CONFIG SET proc-title-template "{foo}"
CONFIG SET proc-title-template ""
CONFIG SET proc-title-template "{title"
CONFIG SET proc-title-template "{title} {title}"
CONFIG SET proc-title-template "{server-mode}"
CONFIG SET proc-title-template "x {port}"
%CONFIG GET proc-title-template
CONFIG SET proc-title-template "{title} {listen-addr} {server-mode}"
CONFIG SET cluster-announce-hostname a_b
%CONFIG GET key-load-delay
%CONFIG GET watchdog-period
%CONFIG GET use-exit-on-panic
%CONFIG GET loading-process-events-interval-bytes
%CONFIG GET *delay*
%CONFIG GET *watchdog*
CONFIG SET watchdog-period -1
CONFIG SET loading-process-events-interval-bytes 1023
CONFIG SET loading-process-events-interval-bytes 1mb
CONFIG SET use-exit-on-panic maybe
CONFIG SET key-load-delay -2147483649
CONFIG SET key-load-delay 0 watchdog-period 0 use-exit-on-panic no loading-process-events-interval-bytes 2097152
CONFIG SET bind "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"
CONFIG SET cluster-announce-hostname a.b-c
%CONFIG GET cluster-announce-hostname
CONFIG SET cluster-announce-hostname ""
CONFIG SET slave-priority 5 replica-priority 6
%CONFIG GET replica-priority slave-priority
CONFIG SET slave-priority 5 slave-priority 6
CONFIG SET min-slaves-to-write 2
%CONFIG GET min-replicas-to-write
CONFIG SET min-replicas-to-write 0
CONFIG SET repl-ping-slave-period 0
CONFIG SET repl-ping-slave-period 20
%CONFIG GET repl-ping-replica-period repl-ping-slave-period
CONFIG SET repl-ping-replica-period 10
CONFIG SET cluster-slave-validity-factor 3
%CONFIG GET cluster-replica-validity-factor
CONFIG SET cluster-replica-validity-factor 10
CONFIG SET masterauth secret masteruser bob
%CONFIG GET master*
CONFIG SET masterauth "" masteruser ""
CONFIG SET cluster-link-sendbuf-limit 99999999999999999999
%CONFIG GET cluster-link-sendbuf-limit
CONFIG SET cluster-link-sendbuf-limit 0
CONFIG SET repl-backlog-size 1gb
%CONFIG GET repl-backlog-size
CONFIG SET repl-backlog-size 1mb
CONFIG SET maxmemory-policy allkeys-lru maxmemory-policy noeviction
CONFIG SET MAXMEMORY-policy allkeys-lru maxmemory-policy noeviction
CONFIG SET lua-time-limit 100 lua-time-limit 200
CONFIG SET lua-time-limit 100 busy-reply-threshold 200
%CONFIG GET busy-reply-threshold lua-time-limit
CONFIG SET busy-reply-threshold 5000
CONFIG SET timeout 7 maxclients 99999999 dynamic-hz no
%CONFIG GET timeout dynamic-hz
CONFIG SET dynamic-hz no activerehashing no sanitize-dump-payload clients
%CONFIG GET dynamic-hz activerehashing sanitize-dump-payload
CONFIG SET dynamic-hz yes activerehashing yes sanitize-dump-payload no
CONFIG SET daemonize yes
# Option loops: the first bad argument's error, options not allowed taking nothing
DEL argl argz args1 args2 argk argk2 argk3 arga argb argf
RPUSH argl a b c a
LPOS argl a RANK 0
LPOS argl a RANK x COUNT -1
LPOS argl a COUNT -1 RANK 0
LPOS argl a MAXLEN -1
LPOS argl a RANK -1 COUNT 0
LPOS argl a RANK
LPOS argl a COUNT 0 MAXLEN 2
ZADD argz 1 a 2 b 3 c
ZRANGE argz 0 -1 LIMIT 0 1
ZRANGE argz 0 -1 BYSCORE LIMIT x 1
ZRANGE argz 0 -1 BYSCORE LIMIT 0
ZRANGE argz (1 +inf BYSCORE LIMIT 0 1 WITHSCORES
ZRANGE argz 0 -1 REV REV
ZMPOP 1 argz MIN COUNT 0
ZMPOP 1 argz MIN COUNT 1 COUNT 1
ZMPOP 1 argz MIN COUNT
ZMPOP 1 argz MAX COUNT 2
LMPOP 1 argl LEFT COUNT x
LMPOP 1 argl LEFT COUNT 2
SADD args1 a b c
SADD args2 b c
SINTERCARD 2 args1 args2 LIMIT -1
SINTERCARD 2 args1 args2 LIMIT 1
SINTERCARD 2 args1 args2 LIMIT
SINTERCARD 2 args1 args2 FOO 1
ZINTERCARD 1 argz LIMIT -1
ZINTERCARD 1 argz LIMIT 1 LIMIT 0
ZINTERCARD 1 argz WITHSCORES
SET argk v EX 10 PX 10
SET argk v EX
SET argk v EX 10 EX 20
SET argk v KEEPTTL EX 10
SET argk v NX XX
SET argk v GET EX x
GETEX argk PERSIST EX 10
GETEX argk EX 0
COPY argk argk2 DB x
COPY argk argk2 DB 99 REPLACE
COPY argk argk2 REPLACE DB 0
COPY argk argk3 DB
SET arga hello
SET argb hallo
LCS arga argb MINMATCHLEN x
LCS arga argb MINMATCHLEN
LCS arga argb IDX MINMATCHLEN 1 WITHMATCHLEN
LCS arga argb IDX LEN
SCAN 0 COUNT 0
SCAN 0 COUNT x MATCH
SCAN 0 MATCH
SSCAN args1 0 TYPE string
~SSCAN args1 0 COUNT 100 MATCH *
SORT argl LIMIT 0 x
SORT argl LIMIT 0
SORT argl LIMIT x 1 DESC
SORT argl DESC ALPHA LIMIT 0 2
SORT argl FOO
SORT_RO argl STORE argk3 BY x
SORT_RO argl STORE argk3 GET #
MEMORY USAGE argk SAMPLES -1
MEMORY USAGE argk SAMPLES x
MEMORY USAGE argk SAMPLES
MEMORY USAGE nokey SAMPLES x
SET argf 1
INCRBYFLOAT argf 0x10
INCRBYFLOAT argf 1e-400
INCRBYFLOAT argf " 1"
INCRBYFLOAT argf inf
HINCRBYFLOAT argh f 0x1p-2
XADD argx 1-1 f v
XADD argx 2-1 f v
XRANGE argx - + COUNT x
XRANGE argx - + COUNT
XRANGE argx - + COUNT -1
XREVRANGE argx + - COUNT 1 COUNT 0
XRANGE argx - + LIMIT 1
CLIENT KILL ID 0
CLIENT KILL ID x
CLIENT KILL ID
CLIENT KILL TYPE foo
CLIENT KILL TYPE normal SKIPME maybe
CLIENT KILL USER nosuchuser
CLIENT KILL FOO bar
CLIENT KILL ADDR 1.2.3.4:5 SKIPME yes
HELLO 2 FOO
HELLO 2 SETNAME
HELLO 2 AUTH default
CLIENT TRACKING on REDIRECT x
CLIENT TRACKING on REDIRECT 0
CLIENT TRACKING on REDIRECT 999999 REDIRECT 1
CLIENT TRACKING on FOO
CLIENT TRACKING on PREFIX
CLIENT TRACKING on PREFIX a
CLIENT TRACKING on BCAST OPTIN
CLIENT TRACKING off
MIGRATE 127.0.0.1 1 argk 0 10 AUTH
MIGRATE 127.0.0.1 1 argk 0 10 AUTH2 u
MIGRATE 127.0.0.1 1 argk 0 10 FOO
MIGRATE 127.0.0.1 1 argk 0 10 KEYS a b
MIGRATE 127.0.0.1 1 "" 0 10 COPY REPLACE KEYS nokey1 nokey2
MIGRATE 127.0.0.1 1 "" 0 10 KEYS
MIGRATE 127.0.0.1 1 nokey 0 x
ZADD argz2 1 a 5 d
ZUNION 2 argz argz2 WEIGHTS 1 x WITHSCORES
ZUNION 2 argz argz2 WEIGHTS 1
ZUNION 2 argz argz2 WEIGHTS 2 3 AGGREGATE max WITHSCORES
ZUNION 2 argz argz2 AGGREGATE foo
ZUNION 2 argz argz2 AGGREGATE
ZINTER 2 argz argz2 WEIGHTS 2 3 AGGREGATE MIN WITHSCORES
ZDIFF 2 argz argz2 WEIGHTS 1 1
ZDIFF 2 argz argz2 WITHSCORES
ZUNIONSTORE argz3 2 argz argz2 WITHSCORES
ZINTERCARD 2 argz argz2 WEIGHTS 1 1
ZINTERCARD 2 argz argz2 LIMIT x
XSETID argx 5-1 ENTRIESADDED -1
XSETID argx 5-1 ENTRIESADDED x
XSETID argx 5-1 MAXDELETEDID 9-9
XSETID argx 5-1 MAXDELETEDID x
XSETID argx 5-1 FOO 1
XSETID argx 5-1 ENTRIESADDED
XGROUP CREATE argx g1 $ MKSTREAM ENTRIESREAD x
XGROUP CREATE argx g1 $ FOO
XGROUP CREATE argx g1 $ ENTRIESREAD -2
XGROUP CREATE argx g1 0 ENTRIESREAD 1
XGROUP SETID argx g1 0 MKSTREAM
XGROUP SETID argx g1 0 ENTRIESREAD 1
XCLAIM argx g1 c1 0 1-1 IDLE x
XCLAIM argx g1 c1 0 1-1 TIME x
XCLAIM argx g1 c1 0 1-1 RETRYCOUNT x
XCLAIM argx g1 c1 0 1-1 LASTID x
XCLAIM argx g1 c1 0 1-1 FOO
XCLAIM argx g1 c1 0 1-1 IDLE
XCLAIM argx g1 c1 0 1-1 FORCE JUSTID RETRYCOUNT 1 TIME 0 LASTID 2-1
XAUTOCLAIM argx g1 c1 0 0 COUNT 0
XAUTOCLAIM argx g1 c1 0 0 COUNT x
XAUTOCLAIM argx g1 c1 0 0 FOO
XAUTOCLAIM argx g1 c1 0 0 COUNT 10 JUSTID
BITFIELD argbf GET u8 0 SET u8 0 x
BITFIELD argbf GET x8 0
BITFIELD argbf GET u8 -1
BITFIELD argbf GET u8
BITFIELD argbf OVERFLOW foo GET u8 0
BITFIELD argbf OVERFLOW
BITFIELD argbf FOO
BITFIELD argbf OVERFLOW sat INCRBY i8 0 200 GET i8 0 SET u4 #1 15 GET u8 0
BITFIELD argbf OVERFLOW fail INCRBY i8 0 200 OVERFLOW WRAP INCRBY i8 0 100
BITFIELD_RO argbf GET u8 0 SET u8 0 1
BITFIELD_RO argbf GET u8 0 GET i4 #3
DEL argl argz args1 args2 argk argk2 argk3 arga argb argf argh argx argz2 argz3 argbf

# ------------------------------------------------ transactions: WATCH, DISCARD
DISCARD
DISCARD x
WATCH
UNWATCH x
WATCH wk1 wk2
UNWATCH
MULTI
WATCH wk1
UNWATCH
DISCARD
# ------------------------------------------------ sorted sets: ZPOPMIN/ZPOPMAX/BZPOPMAX
ZADD zp 1 a 2 b 3 c 4 d
ZPOPMIN zp
ZPOPMAX zp
ZPOPMIN zp 0
ZPOPMAX zp -1
ZPOPMIN zp 10
ZPOPMIN zp x
ZPOPMAX
ZPOPMIN zp 1 2
ZPOPMAX nokey
ZPOPMAX nokey 3
SET zps x
ZPOPMIN zps
ZPOPMAX zps 2
ZADD zp 1 a 2 b
BZPOPMAX zp 0
BZPOPMAX nokey zp 0.01
BZPOPMAX zp x
BZPOPMAX zp -1
BZPOPMAX zp
BZPOPMAX zps 0
BZPOPMAX zp 0
DEL zp zps
# ------------------------------------------------ scripting
EVAL
EVAL "return 1"
EVAL "return 1" 0
EVAL "return 1" x
EVAL "return 1" -1
EVAL "return 1" 2 a
EVAL "return {KEYS[1],ARGV[1]}" 1 k v
EVAL "return redis.call('set',KEYS[1],'x')" 1 ek
EVAL "return redis.call('nosuch')" 0
EVAL "return redis.pcall('nosuch')" 0
EVAL "return redis.call('get','a','b')" 0
EVAL "return redis.call('lpush','ek','x')" 0
EVAL "return redis.pcall('lpush','ek','x')" 0
EVAL "syntax error here" 0
EVAL "error('boom')" 0
EVAL "return redis.error_reply('MY err')" 0
EVAL "return redis.status_reply('FINE')" 0
EVAL "return {1,2,{3,'x'},false,true}" 0
EVAL "return 3.99" 0
EVAL "return redis.setresp(3)" 0
EVAL "redis.setresp(3); return redis.call('hgetall','nokey')" 0
EVAL "return nil" 0
EVAL "local t = {}; t[1]=1; t[3]=3; return t" 0
EVAL "#!lua flags=no-writes\nreturn redis.call('get','ek')" 1 ek
EVAL "#!lua flags=no-writes\nreturn redis.call('set','ek','y')" 1 ek
EVAL "#!lua\nreturn redis.call('get','ek')" 0
EVAL "#!lua flags=foo\nreturn 1" 0
EVAL "#!nosuch\nreturn 1" 0
EVAL_RO "return redis.call('get',KEYS[1])" 1 ek
EVAL_RO "return redis.call('set',KEYS[1],'z')" 1 ek
EVAL_RO
EVALSHA
EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0
EVALSHA nosuch 0
EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff831 0
EVALSHA_RO e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0
EVALSHA_RO ffffffffffffffffffffffffffffffffffffffff 0
SCRIPT LOAD "return 'loaded'"
SCRIPT LOAD
SCRIPT LOAD "syntax error("
SCRIPT EXISTS
SCRIPT EXISTS 2e87d7fa1ceb1d2d0ac0e0b33ee73ec62ad70b84 ffffffffffffffffffffffffffffffffffffffff
EVALSHA 2e87d7fa1ceb1d2d0ac0e0b33ee73ec62ad70b84 0
EVALSHA_RO 2E87D7FA1CEB1D2D0AC0E0B33EE73EC62AD70B84 0
SCRIPT FLUSH x
SCRIPT FLUSH ASYNC
SCRIPT FLUSH SYNC
SCRIPT EXISTS 2e87d7fa1ceb1d2d0ac0e0b33ee73ec62ad70b84
SCRIPT FLUSH
SCRIPT DEBUG
SCRIPT DEBUG foo
SCRIPT DEBUG no
SCRIPT HELP
SCRIPT HELP x
SCRIPT NOSUCH
FUNCTION LOAD "#!lua name=tlib\nredis.register_function('tf', function(keys, args) return #keys + #args end)\nredis.register_function{function_name='tro', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
FUNCTION LOAD "#!lua name=tlib\nredis.register_function('tf', function() return 1 end)"
FUNCTION LOAD "#!lua name=bad\nreturn 1"
FUNCTION LOAD "#!lua\nredis.register_function('x', function() return 1 end)"
FUNCTION LOAD "no shebang"
FCALL
FCALL tf
FCALL tf 0
FCALL tf 2 a b c
FCALL tf x
FCALL tf -1
FCALL nosuch 0
FCALL_RO tf 0
FCALL_RO tro 1 ek
FCALL tro 1 ek
FUNCTION STATS
FUNCTION STATS x
FUNCTION DELETE
FUNCTION DELETE nosuch
FUNCTION DELETE tlib
FUNCTION DELETE tlib
FUNCTION HELP
FUNCTION HELP x
FUNCTION LIST
DEL ek
# ------------------------------------------------ pub/sub
PUBLISH
PUBLISH ch
PUBLISH ch msg
SPUBLISH ch msg
SPUBLISH ch
PUBSUB CHANNELS
PUBSUB CHANNELS a*
PUBSUB CHANNELS a b
PUBSUB NUMSUB
PUBSUB NUMSUB a b
PUBSUB NUMPAT
PUBSUB NUMPAT x
PUBSUB SHARDCHANNELS
PUBSUB SHARDCHANNELS x y
PUBSUB SHARDNUMSUB a
PUBSUB HELP
PUBSUB HELP x
PUBSUB NOSUCH
SUBSCRIBE
SUBSCRIBE ch1
SUBSCRIBE ch2
PING
PING x
GET x
PSUBSCRIBE p*
SSUBSCRIBE sh1
UNSUBSCRIBE ch1
UNSUBSCRIBE
PUNSUBSCRIBE
SUNSUBSCRIBE
UNSUBSCRIBE
PSUBSCRIBE
SSUBSCRIBE
PUNSUBSCRIBE x
SUNSUBSCRIBE x
PUBSUB NUMSUB ch1 ch2
# ------------------------------------------------ connection and client
CLIENT CACHING
CLIENT CACHING yes
CLIENT CACHING no
CLIENT CACHING foo
CLIENT GETREDIR
CLIENT GETREDIR x
CLIENT TRACKINGINFO
CLIENT TRACKINGINFO x
CLIENT TRACKING on BCAST PREFIX a PREFIX b
CLIENT TRACKINGINFO
CLIENT CACHING yes
CLIENT TRACKING off
CLIENT TRACKING on OPTIN
CLIENT CACHING yes
CLIENT CACHING no
CLIENT TRACKINGINFO
CLIENT TRACKING off
CLIENT TRACKING on OPTOUT NOLOOP
CLIENT CACHING no
CLIENT TRACKINGINFO
CLIENT TRACKING off
CLIENT TRACKINGINFO
CLIENT HELP
CLIENT HELP x
CLIENT PAUSE
CLIENT PAUSE x
CLIENT PAUSE -1
CLIENT PAUSE 10 FOO
CLIENT PAUSE 10 WRITE x
CLIENT PAUSE 10 WRITE
CLIENT UNPAUSE
CLIENT UNPAUSE x
CLIENT PAUSE 10 ALL
CLIENT UNPAUSE
CLIENT UNBLOCK
CLIENT UNBLOCK x
CLIENT UNBLOCK 999999
CLIENT UNBLOCK 999999 TIMEOUT
CLIENT UNBLOCK 999999 ERROR
CLIENT UNBLOCK 999999 FOO
CLIENT NOSUCH
ACL HELP
ACL HELP x
# ------------------------------------------------ cluster commands outside cluster mode
ASKING
ASKING x
READONLY
READONLY x
READWRITE
CLUSTER
CLUSTER INFO
CLUSTER HELP
CLUSTER MYID
CLUSTER NODES
CLUSTER SLOTS
CLUSTER SHARDS
CLUSTER KEYSLOT foo
CLUSTER KEYSLOT
CLUSTER COUNTKEYSINSLOT 1
CLUSTER GETKEYSINSLOT 1 1
CLUSTER COUNT-FAILURE-REPORTS x
CLUSTER REPLICAS x
CLUSTER SLAVES x
CLUSTER LINKS
CLUSTER SAVECONFIG
CLUSTER MEET 127.0.0.1 1
CLUSTER FORGET x
CLUSTER ADDSLOTS 1
CLUSTER ADDSLOTSRANGE 1 2
CLUSTER DELSLOTS 1
CLUSTER DELSLOTSRANGE 1 2
CLUSTER FLUSHSLOTS
CLUSTER SETSLOT 1 STABLE
CLUSTER REPLICATE x
CLUSTER FAILOVER
CLUSTER RESET
CLUSTER BUMPEPOCH
CLUSTER SET-CONFIG-EPOCH 1
CLUSTER NOSUCH
# ------------------------------------------------ replication and persistence
WAIT
WAIT 0
WAIT 0 0
WAIT x 0
WAIT 0 x
WAIT -1 0
WAIT 0 -1
ROLE
ROLE x
REPLICAOF
REPLICAOF NO
REPLICAOF NO ONE
REPLICAOF host x
REPLICAOF host -1
REPLICAOF host 99999
SLAVEOF NO ONE
SLAVEOF a b c
REPLCONF
REPLCONF x
REPLCONF x y
REPLCONF listening-port
REPLCONF listening-port x
PSYNC
PSYNC x
SYNC x
MONITOR x
SAVE x
SAVE
BGSAVE x y
BGSAVE FOO
BGREWRITEAOF x
SET rak v
DUMP rak
RESTORE-ASKING rak2 0 "\x00\x01v\x0b\x00\x8f\xe9t\xde\xd6\xd45%"
RESTORE-ASKING rak 0 "\x00\x01v\x0b\x00\x8f\xe9t\xde\xd6\xd45%"
RESTORE-ASKING rak2 0 bad REPLACE
RESTORE-ASKING
GET rak2
DEL rak rak2
# ------------------------------------------------ memory and latency
MEMORY
MEMORY DOCTOR x
MEMORY HELP
MEMORY HELP x
MEMORY PURGE
MEMORY PURGE x
MEMORY STATS x
MEMORY MALLOC-STATS x
MEMORY NOSUCH
LATENCY HISTOGRAM nosuchcmd
LATENCY HISTOGRAM x y
XINFO CONSUMERS
XINFO CONSUMERS nokey
XINFO CONSUMERS nokey g
XADD xc 1-1 f v
XINFO CONSUMERS xc nog
XGROUP CREATE xc g 0
XINFO CONSUMERS xc g
XINFO CONSUMERS xc g x
SET xcs x
XINFO CONSUMERS xcs g
DEL xc xcs

# ------------------------------------------------ QUIT (last: it closes the connection)
QUIT
!PING
PING
"##;

/// How a reply is compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Exact,
    SortArrays,
    SortPairs,
    NoCompare,
    /// Exact against Redis 7.0, not compared against 7.4.
    Only70,
}

struct Line {
    lineno: usize,
    text: String,
    mode: Mode,
    argv: Vec<Vec<u8>>,
}

fn table() -> Vec<Line> {
    let mut out = Vec::new();
    for (i, raw) in TABLE.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (mode, rest) = match line.as_bytes()[0] {
            b'~' => (Mode::SortArrays, &line[1..]),
            b'%' => (Mode::SortPairs, &line[1..]),
            b'!' => (Mode::NoCompare, &line[1..]),
            b'@' => (Mode::Only70, &line[1..]),
            _ => (Mode::Exact, line),
        };
        out.push(Line {
            lineno: i + 1,
            text: line.to_string(),
            mode,
            argv: split(rest),
        });
    }
    out
}

/// Sorts, recursively, every array whose elements are all bulk strings.
fn sort_arrays(v: Value) -> Value {
    match v {
        Value::Array(items) | Value::Set(items) => {
            let mut items: Vec<Value> = items.into_iter().map(sort_arrays).collect();
            if items.iter().all(|i| matches!(i, Value::Bulk(_))) {
                items.sort_by(|a, b| match (a, b) {
                    (Value::Bulk(a), Value::Bulk(b)) => a.cmp(b),
                    _ => std::cmp::Ordering::Equal,
                });
            }
            Value::Array(items)
        }
        other => other,
    }
}

/// Sorts the pairs of a map (RESP3) or of a flat key/value array (RESP2).
fn sort_pairs(v: Value) -> Value {
    let key = |p: &(Value, Value)| format!("{:?}", p.0);
    match v {
        Value::Map(mut pairs) => {
            pairs.sort_by_key(key);
            Value::Map(pairs)
        }
        Value::Array(items) if items.len() % 2 == 0 => {
            let mut pairs: Vec<(Value, Value)> = items
                .chunks(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect();
            pairs.sort_by_key(key);
            Value::Array(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect())
        }
        other => other,
    }
}

fn normalise(bytes: &[u8], mode: Mode) -> Vec<u8> {
    let f = match mode {
        Mode::SortArrays => sort_arrays,
        Mode::SortPairs => sort_pairs,
        _ => return bytes.to_vec(),
    };
    match resp::parse_reply(bytes) {
        Ok(Some((v, _))) => format!("{:?}", f(v)).into_bytes(),
        _ => bytes.to_vec(),
    }
}

/// One side of the comparison: a connection that is reopened (and put
/// back in RESP3 if needed) when the server closes it.
struct Side<'a> {
    server: &'a Server,
    conn: Raw,
    resp3: bool,
}

impl<'a> Side<'a> {
    fn new(server: &'a Server, resp3: bool) -> Side<'a> {
        let mut s = Side {
            server,
            conn: server.raw(),
            resp3,
        };
        s.conn.timeout = Duration::from_secs(10);
        if resp3 {
            let _ = s.conn.cmd(&["HELLO", "3"]);
        }
        s
    }

    fn run(&mut self, argv: &[Vec<u8>]) -> Vec<u8> {
        match self.conn.try_cmd(argv) {
            Ok(r) => r,
            Err(e) => {
                *self = Side::new(self.server, self.resp3);
                format!("<no reply: {e:?}>").into_bytes()
            }
        }
    }
}

/// Replaces the value of the `id` field of a HELLO reply (it differs).
fn mask_hello_id(bytes: &[u8]) -> String {
    let v = parse(bytes);
    let mask = |pairs: Vec<(Value, Value)>| -> Vec<(Value, Value)> {
        pairs
            .into_iter()
            .map(|(k, v)| {
                if k == Value::Bulk(b"id".to_vec()) {
                    (k, Value::Integer(0))
                } else {
                    (k, v)
                }
            })
            .collect()
    };
    let v = match v {
        Value::Map(p) => Value::Map(mask(p)),
        Value::Array(items) => {
            let pairs = items
                .chunks(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect();
            Value::Array(mask(pairs).into_iter().flat_map(|(k, v)| [k, v]).collect())
        }
        other => other,
    };
    format!("{v:?}")
}

/// `tiering_inline_loads` of the server `side` talks to (`None`: the
/// line before killed this connection too).
fn tier_inline_loads(side: &mut Side) -> Option<u64> {
    let info = side.run(&split("INFO tiering"));
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("tiering_inline_loads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs the table on keel and redis-server and compares. With `on_disk`,
/// keel has a disk tier and every value goes to it after each command
/// (`DEBUG SPILL`, on a connection of its own): every command then runs
/// against values read back from disk.
fn differential(resp3: bool, on_disk: bool) {
    let keel = if on_disk {
        Server::keel_with(&["--tiering-dir", "tier"])
    } else {
        Server::keel()
    };
    let redis = Server::redis();
    let mut k = Side::new(&keel, false);
    let mut r = Side::new(&redis, false);
    let mut spiller = on_disk.then(|| Side::new(&keel, false));
    let spill = split("DEBUG SPILL");
    let mut spilled = 0usize;
    let mut inline_loads = 0u64;
    let mut diffs = Vec::new();
    if resp3 {
        let hk = k.run(&split("HELLO 3"));
        let hr = r.run(&split("HELLO 3"));
        k.resp3 = true;
        r.resp3 = true;
        if mask_hello_id(&hk) != mask_hello_id(&hr) {
            diffs.push(format!(
                "HELLO 3 (id masked)\n    keel:  {}\n    redis: {}",
                escape(&hk),
                escape(&hr)
            ));
        }
    }
    let lines = table();
    assert!(
        lines.len() >= 600,
        "the table has only {} commands",
        lines.len()
    );
    for line in &lines {
        let kr = k.run(&line.argv);
        let rr = r.run(&line.argv);
        if let Some(s) = spiller.as_mut() {
            // A command reads a value on disk on the worker only for keys
            // it does not declare: SORT's BY and GET patterns, a script's
            // keys.
            let undeclared = ["sort ", "sort_ro ", "eval "]
                .iter()
                .any(|c| line.text.to_ascii_lowercase().starts_with(c));
            if let Some(inline) = tier_inline_loads(s) {
                if inline != inline_loads && !undeclared {
                    diffs.push(format!(
                        "line {}: {}\n    read {} values on disk on the worker",
                        line.lineno,
                        line.text,
                        inline - inline_loads
                    ));
                }
                inline_loads = inline;
            }
            // (A line that pauses clients or kills connections makes this
            // fail now and then: the next line spills again.)
            if let Some(Value::Integer(n)) = resp::parse_reply(&s.run(&spill))
                .ok()
                .flatten()
                .map(|(v, _)| v)
            {
                spilled += n as usize;
            }
        }
        if line.mode == Mode::NoCompare {
            continue;
        }
        if normalise(&kr, line.mode) != normalise(&rr, line.mode) {
            diffs.push(format!(
                "line {}: {}\n    keel:  {}\n    redis: {}",
                line.lineno,
                line.text,
                escape(&kr),
                escape(&rr)
            ));
        }
    }
    if on_disk {
        // The table leaves values behind most lines: most commands ran
        // against values on disk.
        assert!(
            spilled >= lines.len() / 2,
            "only {spilled} values went to disk over {} commands",
            lines.len()
        );
    }
    if !diffs.is_empty() {
        panic!(
            "{} of {} commands answered differently from redis-server ({}{}):\n{}",
            diffs.len(),
            lines.len(),
            if resp3 { "RESP3" } else { "RESP2" },
            if on_disk { ", values on disk" } else { "" },
            diffs.join("\n")
        );
    }
}

#[test]
fn same_replies_as_redis_resp2() {
    differential(false, false);
}

#[test]
fn same_replies_as_redis_resp3() {
    differential(true, false);
}

#[test]
fn same_replies_as_redis_with_values_on_disk() {
    differential(false, true);
}

#[test]
fn same_replies_as_redis_resp3_with_values_on_disk() {
    differential(true, true);
}

/// The table's replies from a fresh `server`, one per line (normalised as
/// the line's marker says, `-` for `!` lines), for the Redis 7.4 recording.
fn recorded_replies(server: &Server, resp3: bool) -> Vec<String> {
    let mut side = Side::new(server, resp3);
    let mut out = Vec::new();
    if resp3 {
        out.push(format!(
            "HELLO 3 => {}",
            mask_hello_id(&side.run(&split("HELLO 3")))
        ));
    }
    for line in table() {
        let reply = side.run(&line.argv);
        let reply = match line.mode {
            Mode::NoCompare | Mode::Only70 => String::from("-"),
            mode => escape(&normalise(&reply, mode)),
        };
        out.push(format!("{} => {reply}", line.text));
    }
    out
}

/// Where the table's replies from Redis 7.4.1 are kept (CI has no 7.4
/// server): `R2`/`R3` passes, one `command => reply` line each.
const RECORDING_74: &str = "tests/it/data/compat_table_redis74.txt";

fn recording_74() -> (Vec<String>, Vec<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING_74);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (mut r2, mut r3) = (Vec::new(), Vec::new());
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("R2", rest)) => r2.push(rest.to_string()),
            Some(("R3", rest)) => r3.push(rest.to_string()),
            _ => panic!("bad line in {RECORDING_74}: {line}"),
        }
    }
    (r2, r3)
}

/// The whole 7.0 table against keel speaking Redis 7.4.1, compared with
/// the replies recorded from a redis-server 7.4.1 (and with a live one when
/// `KEEL_REDIS74` names it): every command the table covers, with its error
/// cases, answers as 7.4 does in RESP2 and RESP3.
fn differential_74(resp3: bool) {
    let keel = Server::keel_with(&["--redis-version", "7.4.1"]);
    let got = recorded_replies(&keel, resp3);
    let (r2, r3) = recording_74();
    let mut expected = vec![if resp3 { r3 } else { r2 }];
    if let Some(redis) = Server::redis74() {
        expected.push(recorded_replies(&redis, resp3));
    }
    for want in expected {
        let texts = |v: &[String]| -> Vec<String> {
            v.iter()
                .map(|l| l.split(" => ").next().unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(
            texts(&got),
            texts(&want),
            "the table changed since {RECORDING_74} was recorded: run \
             KEEL_REDIS74=<redis-server 7.4.1> cargo test --release -p keel-server \
             --test it compat::record_redis74_table -- --ignored"
        );
        let diffs: Vec<String> = got
            .iter()
            .zip(&want)
            .filter(|(g, w)| g != w)
            .map(|(g, w)| format!("keel:  {g}\n    redis: {w}"))
            .collect();
        assert!(
            diffs.is_empty(),
            "{} of {} commands answered differently from Redis 7.4.1 ({}):\n{}",
            diffs.len(),
            got.len(),
            if resp3 { "RESP3" } else { "RESP2" },
            diffs.join("\n")
        );
    }
}

#[test]
fn same_replies_as_redis_74_resp2() {
    differential_74(false);
}

#[test]
fn same_replies_as_redis_74_resp3() {
    differential_74(true);
}

#[test]
#[ignore = "writes the recording; needs KEEL_REDIS74"]
fn record_redis74_table() {
    let mut out = String::new();
    for (tag, resp3) in [("R2", false), ("R3", true)] {
        let redis = Server::redis74().expect("KEEL_REDIS74: a redis-server 7.4.1");
        for line in recorded_replies(&redis, resp3) {
            out.push_str(&format!("{tag} {line}\n"));
        }
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING_74);
    std::fs::write(&path, out).expect("write the recording");
}

/// Everything the server sends on a fresh connection after `input`, until
/// it closes the connection (or `limit` passes).
fn transcript(server: &Server, input: &[u8]) -> (Vec<u8>, bool) {
    use std::io::Read;
    let mut conn = server.raw();
    conn.send_lossy(input);
    let mut got = Vec::new();
    conn.stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match conn.stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(_) => return (got, false),
        }
    }
}

#[test]
fn protocol_errors_match_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    let cases: Vec<Vec<u8>> = vec![
        b"*abc\r\n".to_vec(),
        b"*3000000000\r\n".to_vec(),
        b"*1\r\n$-2\r\n".to_vec(),
        b"*1\r\n$-1\r\n".to_vec(),
        b"*1\r\n$abc\r\n".to_vec(),
        b"*1\r\n$600000000\r\n".to_vec(),
        b"*1\r\nfoo\r\n".to_vec(),
        b"*2\r\n$4\r\nECHO\r\n:1\r\n".to_vec(),
        b"SET k \"abc\r\n".to_vec(),
        b"SET k 'abc\r\n".to_vec(),
        b"ECHO \"a\"b\r\n".to_vec(),
        b"ECHO 'a'b\r\n".to_vec(),
        b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n".to_vec(),
        b"*-5\r\nPING\r\n*x\r\n".to_vec(),
        vec![b'a'; 70 * 1024],
        [b"*".as_slice(), &vec![b'1'; 70 * 1024]].concat(),
        [b"*1\r\n$".as_slice(), &vec![b'1'; 70 * 1024]].concat(),
        b"*1\r\n$4\r\nPINGxx\r\n".to_vec(),
    ];
    let mut diffs = Vec::new();
    for input in &cases {
        let (kt, kclosed) = transcript(&keel, input);
        let (rt, rclosed) = transcript(&redis, input);
        if kt != rt || kclosed != rclosed {
            let shown = if input.len() > 60 {
                format!("{}... ({} bytes)", escape(&input[..60]), input.len())
            } else {
                escape(input)
            };
            diffs.push(format!(
                "input {shown}\n    keel:  {} (closed: {kclosed})\n    redis: {} (closed: {rclosed})",
                escape(&kt),
                escape(&rt)
            ));
        }
    }
    // Both servers still serve.
    eqb!(keel.raw().cmd(&["PING"]), b"+PONG\r\n");
    eqb!(redis.raw().cmd(&["PING"]), b"+PONG\r\n");
    assert!(
        diffs.is_empty(),
        "protocol handling differs:\n{}",
        diffs.join("\n")
    );
}

// ---------------------------------------------------------------------------
// COMMAND INFO / COMMAND DOCS metadata against Redis's.

/// Commands and subcommands newer than Redis 7.0 (CLIENT SETINFO, CLIENT
/// NO-TOUCH and WAITAOF are Redis 7.2's, hash-field expiry 7.4's, SCRIPT
/// SHOW Valkey 8.0's): their metadata was recorded from a 7.4.1 server, or
/// written from Valkey's command file (keel_commands.json).
const NEWER_THAN_7_0: &[&str] = &[
    "client|setinfo",
    "client|no-touch",
    "cluster|myshardid",
    "waitaof",
    "hexpire",
    "hpexpire",
    "hexpireat",
    "hpexpireat",
    "httl",
    "hpttl",
    "hexpiretime",
    "hpexpiretime",
    "hpersist",
    // Valkey 8.0's.
    "script|show",
    "client|capa",
    "cluster|slot-stats",
];

fn bulk_text(v: &Value) -> String {
    match v {
        Value::Bulk(b) | Value::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a string, got {other:?}"),
    }
}

fn pairs_of(v: &Value) -> Vec<(Value, Value)> {
    match v {
        Value::Map(p) => p.clone(),
        Value::Array(items) => items
            .chunks(2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect(),
        other => panic!("expected a map, got {other:?}"),
    }
}

fn list_of(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(i) | Value::Set(i) => i.clone(),
        other => panic!("expected an array, got {other:?}"),
    }
}

fn keel_command_names(conn: &mut Raw) -> Vec<String> {
    list_of(&conn.call(&["COMMAND", "LIST"]))
        .iter()
        .map(bulk_text)
        .collect()
}

/// Compares COMMAND INFO (or DOCS) of every command keel implements.
fn compare_metadata(resp3: bool, docs: bool) -> Vec<String> {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut k = keel.raw();
    let mut r = redis.raw();
    if resp3 {
        k.cmd(&["HELLO", "3"]);
        r.cmd(&["HELLO", "3"]);
    }
    let names = keel_command_names(&mut k);
    let redis_names = keel_command_names(&mut r);
    let mut diffs = Vec::new();
    for n in &names {
        if !redis_names.contains(n) && !NEWER_THAN_7_0.contains(&n.as_str()) {
            diffs.push(format!("{n}: in keel's COMMAND LIST but not in Redis's"));
        }
    }
    assert!(
        names.len() > 50,
        "COMMAND LIST has only {} names",
        names.len()
    );
    let sub = if docs { "DOCS" } else { "INFO" };
    let mut containers = 0;
    for name in &names {
        if NEWER_THAN_7_0.contains(&name.as_str()) {
            continue;
        }
        let kr = k.cmd(&["COMMAND", sub, name]);
        let rr = r.cmd(&["COMMAND", sub, name]);
        if kr == rr {
            continue;
        }
        let kv = parse(&kr);
        let rv = parse(&rr);
        let is_container =
            !name.contains('|') && names.iter().any(|n| n.starts_with(&format!("{name}|")));
        if !is_container {
            diffs.push(format!(
                "COMMAND {sub} {name}\n    keel:  {}\n    redis: {}",
                escape(&kr),
                escape(&rr)
            ));
            continue;
        }
        // A container: keel lists only the subcommands it implements.
        containers += 1;
        let (kfields, rfields, ksubs, rsubs) = if docs {
            let kdoc = pairs_of(&pairs_of(&kv)[0].1);
            let rdoc = pairs_of(&pairs_of(&rv)[0].1);
            let split_subs = |d: Vec<(Value, Value)>| {
                let mut rest = Vec::new();
                let mut subs = Vec::new();
                for (key, val) in d {
                    if bulk_text(&key) == "subcommands" {
                        subs = pairs_of(&val);
                    } else {
                        rest.push((key, val));
                    }
                }
                (rest, subs)
            };
            let (kf, ks) = split_subs(kdoc);
            let (rf, rs) = split_subs(rdoc);
            (format!("{kf:?}"), format!("{rf:?}"), ks, rs)
        } else {
            let kentry = list_of(&list_of(&kv)[0]);
            let rentry = list_of(&list_of(&rv)[0]);
            let named = |subs: &Value| -> Vec<(Value, Value)> {
                list_of(subs)
                    .into_iter()
                    .map(|s| (list_of(&s)[0].clone(), s))
                    .collect()
            };
            (
                format!("{:?}", &kentry[..9]),
                format!("{:?}", &rentry[..9]),
                named(&kentry[9]),
                named(&rentry[9]),
            )
        };
        if kfields != rfields {
            diffs.push(format!(
                "COMMAND {sub} {name} (fields other than subcommands)\n    keel:  {kfields}\n    redis: {rfields}"
            ));
        }
        for (sname, sval) in &ksubs {
            let sn = bulk_text(sname);
            if NEWER_THAN_7_0.contains(&sn.as_str()) {
                continue;
            }
            match rsubs.iter().find(|(n, _)| n == sname) {
                Some((_, rval)) if rval == sval => {}
                Some((_, rval)) => diffs.push(format!(
                    "COMMAND {sub} {name}: subcommand {sn}\n    keel:  {sval:?}\n    redis: {rval:?}"
                )),
                None => diffs.push(format!("COMMAND {sub} {name}: subcommand {sn} unknown to Redis")),
            }
        }
        let listed: Vec<String> = ksubs.iter().map(|(n, _)| bulk_text(n)).collect();
        for n in names.iter().filter(|n| n.starts_with(&format!("{name}|"))) {
            if !listed.contains(n) {
                diffs.push(format!(
                    "COMMAND {sub} {name}: implemented subcommand {n} not listed"
                ));
            }
        }
    }
    // CLIENT, CONFIG, COMMAND and OBJECT at least went through the
    // per-subcommand comparison.
    assert!(containers >= 4, "only {containers} containers compared");
    diffs
}

#[test]
fn command_info_matches_redis() {
    let mut diffs = compare_metadata(false, false);
    diffs.extend(compare_metadata(true, false));
    assert!(
        diffs.is_empty(),
        "COMMAND INFO differs:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn command_docs_match_redis() {
    let mut diffs = compare_metadata(false, true);
    diffs.extend(compare_metadata(true, true));
    assert!(
        diffs.is_empty(),
        "COMMAND DOCS differs:\n{}",
        diffs.join("\n")
    );
}
