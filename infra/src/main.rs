use clap::Parser;

// jemalloc, not the functions' mimalloc (`aws_kit::alloc`): replay reads
// and plans on one thread and handles the batches on another, which frees
// what the first allocated. jemalloc keeps a freed block in the freeing
// thread's cache and hands it out again from there, still in that core's
// cache; mimalloc sends it back to the allocating thread's page, whose next
// allocation then loads a line the other core wrote last. So jemalloc
// spends less time allocating on replay, and replay runs faster (see
// `docs/PERFORMANCE.md`, "The allocator of the `streamdex` command").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (its `malloc_conf`; the
/// `_RJEM_MALLOC_CONF` variable adds to them): each thread's cache holds up
/// to eight slabs' worth of a small size class (2,048 blocks at most, not
/// two slabs' worth and 200) and, when full, gives back an eighth of it,
/// not half; so the blocks the handling thread frees stay in its cache
/// until it allocates again. That takes less of replay's time in the
/// allocator than jemalloc's defaults, at the same peak RSS (see
/// `docs/PERFORMANCE.md`).
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: Conf =
    Conf(c"lg_tcache_nslots_mul:3,tcache_nslots_small_max:2048,lg_tcache_flush_small_div:3".as_ptr());

/// A C string that jemalloc reads at its start; never written.
#[repr(transparent)]
struct Conf(*const std::ffi::c_char);

// SAFETY: the pointer is to a constant, NUL-terminated string literal that
// nothing writes; sharing it between threads shares only reads.
unsafe impl Sync for Conf {}

fn main() -> std::process::ExitCode {
    aws_kit::lambda::no_huge_pages();
    infra::cli::run(infra::cli::Cli::parse())
}
