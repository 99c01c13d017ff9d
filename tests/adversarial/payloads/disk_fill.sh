# Fill the job directory: its cap must stop us, not the host's disk.
out=$(dd if=/dev/zero of=/job/fill bs=1M count=4096 2>&1)
echo "dd-exit=$?"
echo "$out" | head -n 3
df -k /job | tail -n 1
