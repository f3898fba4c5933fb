/** Whether process `pid` still runs on this machine (signal 0: a check, nothing is sent). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
